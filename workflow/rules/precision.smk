# Rules of the precision family are added by its issue.
