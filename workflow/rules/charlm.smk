# Rules of the charlm family are added by its issue.
