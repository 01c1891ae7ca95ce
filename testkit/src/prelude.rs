//! What a test file imports with one line, `use testkit::prelude::*;`: the client, the
//! operations, the reply accessors and a loopback MDS. Cross-role helpers (data server
//! processes, the loopback cluster) are imported from [`crate::loopback`] by name.

pub use crate::client::{
    auth_sys, auth_sys_groups, channel, client_instance_with_back_channel,
    client_with_back_channel, compound_as, compound_on, connect, connect_with, denied, fileid_of,
    null_call, open_and_layoutget, open_and_layoutget_in, open_and_layoutget_of, open_in_root,
    rpcsec_gss, rw_layout_fh, sequence_op, start_conn, CbClient, Client, RecallAnswer, Setup,
    CB_PROGRAM,
};
pub use crate::compound::{
    getfh_res, granted, last_status, layoutget_res, lock_stateid, open_res, read_res, status_of,
    write_res, Compound, Reply as _,
};
pub use crate::loopback::{
    advance, server, server_in, start_mds, start_on, start_with, ManualClock, Server,
};
pub use crate::ops::*;
