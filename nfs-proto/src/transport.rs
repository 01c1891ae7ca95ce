//! tokio glue: the record-marking codec and vectored record writes.
