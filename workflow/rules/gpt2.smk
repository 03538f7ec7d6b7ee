# Rules of the gpt2 family are added by its issue.
