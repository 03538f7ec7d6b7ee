# Rules of the depth family are added by its issue.
