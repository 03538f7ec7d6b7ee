# Rules of the corpus family are added by its issue.
