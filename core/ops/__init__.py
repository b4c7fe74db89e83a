"""Looking after a database: doctor (check and repair), stats, and the BEIR retrieval evaluation."""
