"""Claims: the documents' conclusions as data (data/claims.csv), the relation that tests each, and the judge."""
