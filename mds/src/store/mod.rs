//! The metadata store: namespace, attributes and filehandles in redb, with group commit.
