# Rules of the optim family are added by its issue.
