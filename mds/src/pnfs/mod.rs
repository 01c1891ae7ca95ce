//! pNFS: the data servers behind the metadata server.
//!
//! ```text
//!  devices   the registry of data servers (up or down, addresses, device ids) and their
//!            control connections ─> dsctl (the control protocol's client), made over TCP
//!            or through an injected connector (dsconnect: the test kit's in-memory cluster)
//!  dirlayout placement: which directories have a layout policy of their own
//!  datapath  striped file data read and written through the MDS
//!  dsobjects sizes, truncates and end-of-file hints of striped files' objects
//!  dsspace   ALLOCATE, DEALLOCATE, SEEK and space used on the data servers
//!  spacewatch which striped files GETATTR asks the data servers for space used
//!  fencing   revocations for the data servers, layout recalls
//!  mirrors   stale copies of mirrored files, re-silvering
//!  notify    CB_NOTIFY_DEVICEID to clients watching devices
//!  removals  the durable queue of deleted files' objects
//!  settle    sizes of files written through layouts, across restarts
//! ```
pub mod datapath;
pub mod devices;
pub mod dirlayout;
pub mod dsconnect;
pub mod dsctl;
pub mod dsobjects;
pub mod dsspace;
pub mod fencing;
pub mod mirrors;
pub mod notify;
pub mod removals;
pub mod replaced;
pub mod reports;
pub mod settle;
pub mod spacewatch;
