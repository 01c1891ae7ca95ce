//! Owners as the kernel wants them (numbers) from owners as NFSv4 names them (strings):
//! a number (`"1000"`, what our MDS and knfsd without an id mapper send), or a name
//! `user@domain` (nfs-ganesha sends `root@localdomain`), mapped through this host's
//! `/etc/passwd` and `/etc/group` as `nfsidmap` would. A name this host does not know is
//! `nobody` (65534): never an id the kernel would let someone else act as (shown as 65534,
//! `root@localdomain` would let user 65534 chmod root's files, which the server, hearing the
//! mount's root credential, would then do).

use std::collections::HashMap;
use std::sync::OnceLock;

/// `nobody`, what an unknown owner is shown as.
pub(crate) const NOBODY: u32 = 65534;

/// Names of a colon-separated database (`name:x:id:...`) by name.
fn load(path: &str) -> HashMap<String, u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut f = l.split(':');
            let name = f.next()?;
            let id = f.nth(1)?.parse().ok()?;
            Some((name.to_string(), id))
        })
        .collect()
}

fn users() -> &'static HashMap<String, u32> {
    static USERS: OnceLock<HashMap<String, u32>> = OnceLock::new();
    USERS.get_or_init(|| load("/etc/passwd"))
}

fn groups() -> &'static HashMap<String, u32> {
    static GROUPS: OnceLock<HashMap<String, u32>> = OnceLock::new();
    GROUPS.get_or_init(|| load("/etc/group"))
}

fn id_in(owner: &str, names: &HashMap<String, u32>) -> u32 {
    let name = owner.split('@').next().unwrap_or("");
    name.parse()
        .ok()
        .or_else(|| names.get(name).copied())
        .unwrap_or(NOBODY)
}

/// The uid of owner `owner`.
pub(crate) fn uid_of(owner: &str) -> u32 {
    id_in(owner, users())
}

/// The gid of group `group`.
pub(crate) fn gid_of(group: &str) -> u32 {
    id_in(group, groups())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_names_and_strangers() {
        assert_eq!(uid_of("1000"), 1000);
        assert_eq!(uid_of("0@localdomain"), 0);
        // Every Linux host has root, uid 0 and gid 0.
        assert_eq!(uid_of("root@localdomain"), 0);
        assert_eq!(gid_of("root@localdomain"), 0);
        assert_eq!(uid_of("no-such-user-here@x"), NOBODY);
        assert_eq!(uid_of(""), NOBODY);
    }

    #[test]
    fn the_database_is_read_by_fields() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("passwd");
        std::fs::write(
            &p,
            "alice:x:1001:1001::/home/alice:/bin/sh\nbroken\n:x:\nbob:x:nan:1\n",
        )
        .unwrap();
        let m = load(p.to_str().unwrap());
        assert_eq!(m.get("alice"), Some(&1001));
        assert_eq!(m.len(), 1);
    }
}
