//! Which NFSv4 data items may travel in a chunk (direct data placement), as RFC 8267 (the NFS
//! Upper-Layer Binding to RPC-over-RDMA version 1) lists them for every NFSv4 minor version.
//!
//! Only four items of COMPOUND are DDP-eligible: the data of WRITE (`WRITE4args`), the link
//! target of a CREATE of a symbolic link (`linkdata` of the `NF4LNK` arm of `createtype4`), the
//! data of READ (`READ4resok`) and the target READLINK returns (`READLINK4resok.link`). Every other
//! item goes inline or, whole, in a Position-Zero Read chunk or a Reply chunk. RFC 8267 lists
//! nothing of NFSv4.2: READ_PLUS and WRITE_SAME data, and the extended attribute values of RFC
//! 8276, are not DDP-eligible even though this crate's encoder keeps them as separate payload
//! pieces (the NFS ULB version 2 draft says the same of READ_PLUS explicitly). NFSv4 callbacks
//! have no DDP-eligible item.
//!
//! Write chunks pair with results in order (RFC 8267, multiple DDP-eligible data items): the
//! first operation with a DDP-eligible result (what RFC 8267 calls a "READ operation") uses the
//! first Write chunk, the next the next, and so on; an operation past the last Write chunk, or
//! given an empty one, returns its data inline; one whose result carries no eligible item
//! (an error) leaves its Write chunk empty.

use crate::nfs4::{Createtype4, NfsArgop4, NfsOpnum4};

/// A DDP-eligible item of an NFSv4 COMPOUND.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DdpItem {
    /// WRITE's data, an argument (a Read chunk at its position).
    WriteData,
    /// The link target of CREATE of a symbolic link, an argument.
    SymlinkTarget,
    /// READ's data, a result (a Write chunk).
    ReadData,
    /// READLINK's target, a result (a Write chunk).
    ReadlinkTarget,
}

impl DdpItem {
    /// The XDR field, as RFC 8267 names it.
    pub fn xdr_field(self) -> &'static str {
        match self {
            Self::WriteData => "WRITE4args.data",
            Self::SymlinkTarget => "createtype4.linkdata (NF4LNK)",
            Self::ReadData => "READ4resok.data",
            Self::ReadlinkTarget => "READLINK4resok.link",
        }
    }
}

/// The DDP-eligible argument of an operation, if it has one: WRITE's data, or the target of a
/// CREATE that makes a symbolic link.
pub fn argument_item(op: &NfsArgop4) -> Option<DdpItem> {
    match op {
        NfsArgop4::Write(_) => Some(DdpItem::WriteData),
        NfsArgop4::Create(c) if matches!(c.objtype, Createtype4::Lnk(_)) => {
            Some(DdpItem::SymlinkTarget)
        }
        _ => None,
    }
}

/// The DDP-eligible result of a successful operation, if it has one: READ's data or
/// READLINK's target.
pub fn result_item(op: NfsOpnum4) -> Option<DdpItem> {
    match op {
        NfsOpnum4::OP_READ => Some(DdpItem::ReadData),
        NfsOpnum4::OP_READLINK => Some(DdpItem::ReadlinkTarget),
        _ => None,
    }
}

/// Which Write chunk the operation at `index` of a COMPOUND uses for its result: the number of
/// operations with a DDP-eligible result before it, if it has one itself. The caller checks
/// that the Write list is that long (and the chunk not empty); otherwise the result goes
/// inline.
pub fn write_chunk_index(ops: &[NfsArgop4], index: usize) -> Option<usize> {
    result_item(ops.get(index)?.opnum())?;
    Some(
        ops[..index]
            .iter()
            .filter(|op| result_item(op.opnum()).is_some())
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nfs4::{CreateArgs, ReadArgs, WriteArgs};

    fn read() -> NfsArgop4 {
        NfsArgop4::Read(ReadArgs {
            stateid: Default::default(),
            offset: 0,
            count: 4096,
        })
    }

    #[test]
    fn only_write_data_and_symlink_targets_are_eligible_arguments() {
        let write = NfsArgop4::Write(WriteArgs {
            stateid: Default::default(),
            offset: 0,
            stable: crate::nfs4::StableHow4::UNSTABLE4,
            data: Default::default(),
        });
        assert_eq!(argument_item(&write), Some(DdpItem::WriteData));
        let create = |objtype| {
            NfsArgop4::Create(CreateArgs {
                objtype,
                objname: "l".into(),
                createattrs: Default::default(),
            })
        };
        assert_eq!(
            argument_item(&create(Createtype4::Lnk("t".into()))),
            Some(DdpItem::SymlinkTarget)
        );
        assert_eq!(argument_item(&create(Createtype4::Dir)), None);
        assert_eq!(argument_item(&read()), None);
    }

    #[test]
    fn only_read_and_readlink_have_eligible_results() {
        assert_eq!(result_item(NfsOpnum4::OP_READ), Some(DdpItem::ReadData));
        assert_eq!(
            result_item(NfsOpnum4::OP_READLINK),
            Some(DdpItem::ReadlinkTarget)
        );
        for op in [
            NfsOpnum4::OP_READ_PLUS,
            NfsOpnum4::OP_WRITE_SAME,
            NfsOpnum4::OP_GETXATTR,
            NfsOpnum4::OP_READDIR,
            NfsOpnum4::OP_GETATTR,
        ] {
            assert_eq!(result_item(op), None, "{op:?}");
        }
        assert_eq!(DdpItem::ReadData.xdr_field(), "READ4resok.data");
    }

    #[test]
    fn write_chunks_pair_with_reads_in_order() {
        // RFC 8267's example: PUTFH LOOKUP READ PUTFH LOOKUP READLINK PUTFH LOOKUP READ.
        let putfh = NfsArgop4::PutFh(Default::default());
        let lookup = NfsArgop4::Lookup(crate::nfs4::LookupArgs {
            objname: "f".into(),
        });
        let readlink = NfsArgop4::ReadLink;
        let ops = [
            putfh.clone(),
            lookup.clone(),
            read(),
            putfh.clone(),
            lookup.clone(),
            readlink,
            putfh,
            lookup,
            read(),
        ];
        let pairs: Vec<_> = (0..ops.len())
            .filter_map(|i| write_chunk_index(&ops, i).map(|c| (i, c)))
            .collect();
        assert_eq!(pairs, [(2, 0), (5, 1), (8, 2)]);
        assert_eq!(write_chunk_index(&ops, 99), None);
    }
}
