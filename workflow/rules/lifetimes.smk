# Rules of the lifetimes family are added by its issue.
