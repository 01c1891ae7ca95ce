//! The parallel file system core (skeleton): the object store trait and its backends (local
//! files, null, shared). Not built yet; the metadata server issue brings the `local` backend.
