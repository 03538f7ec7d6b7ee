# Rules of the tensor family are added by its issue.
