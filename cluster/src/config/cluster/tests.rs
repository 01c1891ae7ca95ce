//! Tests of the `cluster` section: parsing, defaults, the secret, validation.

use std::os::unix::fs::PermissionsExt;

use super::*;

fn parse(yaml: &str) -> Result<Config, ConfigError> {
    Config::parse(yaml)
}

const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

#[test]
fn the_default_is_three_data_servers_on_this_host() {
    let c = parse("").unwrap();
    let ds = &c.cluster.data_servers;
    assert_eq!(ds.len(), 3);
    for (i, d) in ds.iter().enumerate() {
        let port = 20491 + i as u16;
        assert_eq!(d.id as usize, i + 1);
        assert_eq!(d.addresses, vec![SocketAddr::from(([0, 0, 0, 0], port))]);
        assert_eq!(d.listen_addr(), SocketAddr::from(([0, 0, 0, 0], port)));
        assert_eq!(
            d.control_addr(),
            Some(SocketAddr::from(([127, 0, 0, 1], port + 100)))
        );
        assert_eq!(d.control_listen_addr(), d.control_addr());
        assert_eq!(
            d.data_dir_in(Path::new("/d")),
            PathBuf::from(format!("/d/ds{}", i + 1))
        );
        assert_eq!(d.backend, Backend::Local);
    }
    let p = c.cluster.layout_for(1).unwrap();
    assert_eq!(
        p,
        LayoutPolicy {
            stripe_unit: 1 << 20,
            stripe_count: 3,
            packing: Packing::Dense,
            flex_files: false,
            mirrors: 1,
        }
    );
}

#[test]
fn an_mds_without_data_servers_is_valid_and_has_no_layout() {
    let c = parse("cluster:\n  data_servers: []\n").unwrap();
    assert!(c.cluster.data_servers.is_empty());
    assert_eq!(c.cluster.layout_for(1), None);
    let e = parse("cluster:\n  data_servers: []\n  layout:\n    stripe_count: 1\n").unwrap_err();
    assert_eq!(e.field, "cluster.layout.stripe_count");
    assert!(e.message.contains("outside 1..=0"), "{e}");
}

#[test]
fn a_full_cluster_section_parses() {
    let c = parse(&format!(
        "exports:\n  - id: 1\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
             cluster:\n  secret: {SECRET}\n  data_servers:\n\
             \x20   - id: 4\n      addresses: [10.0.0.4:2049, \"[fd00::4]:2049\"]\n\
             \x20     control: 10.0.0.4:7000\n      data_dir: /srv/ds\n      backend: null\n\
             \x20   - id: 5\n      addresses: [10.0.0.5:2049]\n      listen: 10.0.0.5:2049\n\
             \x20     control_listen: 0.0.0.0:7001\n\
             \x20     rdma_listen: null\n\
             \x20 layout:\n    stripe_unit: 65536\n    stripe_count: 2\n    exports:\n\
             \x20     - export: 2\n        stripe_count: 1\n        stripe_unit: 4194304\n"
    ))
    .unwrap();
    let [a, b] = &c.cluster.data_servers[..] else {
        panic!("{:?}", c.cluster.data_servers)
    };
    assert_eq!(a.addresses.len(), 2);
    assert_eq!(a.backend, Backend::Null);
    assert_eq!(a.control_addr(), Some("10.0.0.4:7000".parse().unwrap()));
    assert_eq!(a.data_dir_in(Path::new("/x")), PathBuf::from("/srv/ds"));
    assert_eq!(b.control_addr(), Some("10.0.0.5:2149".parse().unwrap()));
    assert_eq!(
        b.control_listen_addr(),
        Some("0.0.0.0:7001".parse().unwrap())
    );
    // RDMA: by default the NFS listen port + 200, at each advertised IP; null turns it off.
    assert_eq!(a.rdma_listen_addr(), Some("0.0.0.0:2249".parse().unwrap()));
    assert_eq!(
        a.rdma_addresses(),
        [
            "10.0.0.4:2249".parse::<SocketAddr>().unwrap(),
            "[fd00::4]:2249".parse().unwrap()
        ]
    );
    assert_eq!(b.rdma_listen_addr(), None);
    assert!(b.rdma_addresses().is_empty());
    let p1 = c.cluster.layout_for(1).unwrap();
    assert_eq!((p1.stripe_unit, p1.stripe_count), (65536, 2));
    let p2 = c.cluster.layout_for(2).unwrap();
    assert_eq!((p2.stripe_unit, p2.stripe_count), (4 << 20, 1));
    assert_eq!(
        c.cluster
            .load_secret(Path::new("/nonexistent"))
            .unwrap()
            .as_bytes()[..2],
        [0x00, 0x11]
    );
}

#[test]
fn shared_backend_needs_a_directory_and_gives_sparse_packing() {
    let e = parse(
        "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n",
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster.data_servers[0].shared_dir: backend shared needs a shared_dir"
    );
    let c = parse(
        "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n      shared_dir: /gpfs/pnfs\n",
    )
    .unwrap();
    assert_eq!(c.cluster.packing(), Packing::Sparse);
    let e = parse(
        "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     shared_dir: /gpfs/pnfs\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].shared_dir");
    assert!(e.message.contains("/gpfs/pnfs"), "{e}");
    let e = parse(
        "cluster:\n  data_servers:\n    - id: 1\n      addresses: [127.0.0.1:3000]\n\
             \x20     backend: shared\n      shared_dir: /g\n\
             \x20   - id: 2\n      addresses: [127.0.0.1:3001]\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "cluster.data_servers");
    assert!(e.message.contains("1 of 2"), "{e}");
}

#[test]
fn ids_addresses_and_ports_must_be_unique_where_they_would_clash() {
    let ds = |rest: &str| parse(&format!("cluster:\n  data_servers:\n{rest}"));
    let e = ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 1\n      addresses: [10.0.0.2:2049]\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster.data_servers[1].id: 1 is used by another data server"
    );
    let e = ds("    - id: 0\n      addresses: [10.0.0.1:2049]\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].id");
    let e = ds("    - id: 1\n      addresses: []\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].addresses");
    let e = ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 2\n      addresses: [10.0.0.1:2049]\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[1].addresses[0]");
    assert!(
        e.message
            .contains("10.0.0.1:2049 is also cluster.data_servers[0].addresses[0]"),
        "{e}"
    );
    // Two data servers on the MDS's host must not share a port ...
    let e = ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n    - id: 2\n      addresses: [127.0.0.2:3000]\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[1].listen");
    assert!(e.message.contains("0.0.0.0:3000"), "{e}");
    // ... unless they listen on different specific addresses.
    ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n      listen: 127.0.0.1:3000\n      control: 127.0.0.1:4000\n\
            \x20   - id: 2\n      addresses: [127.0.0.2:3000]\n      listen: 127.0.0.2:3000\n      control: 127.0.0.2:4000\n").unwrap();
    // Different hosts reuse ports freely.
    ds("    - id: 1\n      addresses: [10.0.0.1:2049]\n    - id: 2\n      addresses: [10.0.0.2:2049]\n").unwrap();
    // A data server on the MDS's host must not take the MDS's port.
    let e = ds("    - id: 1\n      addresses: [127.0.0.1:2049]\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].listen");
    assert!(e.message.contains("by listen (0.0.0.0:2049)"), "{e}");
    // Nor its own NFS port for control.
    let e = ds("    - id: 1\n      addresses: [127.0.0.1:3000]\n      control: 127.0.0.1:3000\n")
        .unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].control");
    let e = ds("    - id: 1\n      addresses: [127.0.0.1:65500]\n").unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].control");
    assert!(e.message.contains("65500 + 100"), "{e}");
}

#[test]
fn layout_values_are_checked_and_name_their_field() {
    let e = parse("cluster:\n  layout:\n    stripe_unit: 1000\n").unwrap_err();
    assert_eq!(e.field, "cluster.layout.stripe_unit");
    assert!(
        e.message
            .starts_with("1000 is not a non-zero multiple of 64"),
        "{e}"
    );
    let e = parse("cluster:\n  layout:\n    stripe_count: 4\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster.layout.stripe_count: 4 is outside 1..=3 (the number of data servers)"
    );
    let e = parse("cluster:\n  layout:\n    exports:\n      - export: 9\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "cluster.layout.exports[0].export: 9 is not an export id"
    );
    let e = parse("cluster:\n  layout:\n    exports:\n      - export: 1\n        stripe_unit: 0\n")
        .unwrap_err();
    assert_eq!(e.field, "cluster.layout.exports[0].stripe_unit");
    let e = parse("cluster:\n  layout:\n    exports:\n      - export: 1\n      - export: 1\n")
        .unwrap_err();
    assert_eq!(e.field, "cluster.layout.exports[1].export");
    let e = parse("cluster:\n  layuot: {}\n").unwrap_err();
    assert!(e.to_string().contains("layuot"), "{e}");
    let e = parse("cluster:\n  data_servers:\n    - id: 1\n      addresses: [1.2.3.4:5]\n      backend: tape\n").unwrap_err();
    assert!(e.to_string().contains("tape"), "{e}");
}

#[test]
fn directory_overrides_take_the_first_export_by_default_and_inherit_its_policy() {
    let c = parse(
        "exports:\n  - id: 3\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
             cluster:\n  layout:\n    stripe_count: 2\n    exports:\n\
             \x20     - { export: 2, stripe_unit: 4194304 }\n    directories:\n\
             \x20     - { path: /home/big, stripe_count: 3 }\n\
             \x20     - { export: 2, path: /, stripe_count: 1 }\n\
             \x20     - { export: 2, path: /small/, stripe_unit: 65536 }\n",
    )
    .unwrap();
    let exports = &c.exports;
    let d = &c.cluster.layout.directories;
    assert_eq!(d[0].export_in(exports), Some(3), "the first export");
    assert_eq!(d[0].components().unwrap(), vec!["home", "big"]);
    assert_eq!(d[1].components().unwrap(), Vec::<&str>::new());
    assert_eq!(d[2].components().unwrap(), vec!["small"]);
    let policy = |i: usize| {
        let p = c
            .cluster
            .layout_for_directory(d[i].export_in(exports).unwrap(), &d[i])
            .unwrap();
        (p.stripe_unit, p.stripe_count)
    };
    assert_eq!(policy(0), (1 << 20, 3));
    assert_eq!(policy(1), (4 << 20, 1));
    // An unset count is the export's (the cluster's 2 here), not another directory's.
    assert_eq!(policy(2), (65536, 2));
}

#[test]
fn directory_overrides_are_checked_and_name_their_field() {
    let dirs = |exports: &str, entries: &str| {
        parse(&format!(
            "exports:\n{exports}cluster:\n  layout:\n    directories:\n{entries}"
        ))
        .unwrap_err()
        .to_string()
    };
    let one = "  - id: 1\n";
    let two = "  - id: 1\n  - id: 2\n    path: /s\n    pseudo: /s\n";
    assert_eq!(
        dirs(one, "      - { export: 9, path: /a }\n"),
        "cluster.layout.directories[0].export: 9 is not an export id"
    );
    for bad in ["a/b", "/a/../b", "/./a", ""] {
        assert_eq!(
            dirs(one, &format!("      - {{ path: \"{bad}\" }}\n")),
            format!(
                "cluster.layout.directories[0].path: {bad:?} must be an absolute path \
                     inside the export, without . or .."
            )
        );
    }
    // A directory behind a junction (export 1 at / carries export 2 as "s") is the
    // MDS's to refuse: `mds::config` tests it.
    assert_eq!(
        dirs(
            one,
            "      - { path: /a }\n      - { export: 1, path: \"//a/\" }\n"
        ),
        "cluster.layout.directories[1].path: \"//a/\" of export 1 has another layout entry"
    );
    let e = dirs(one, "      - { path: /a, stripe_unit: 100 }\n");
    assert!(
        e.starts_with("cluster.layout.directories[0].stripe_unit: 100 is not"),
        "{e}"
    );
    assert_eq!(
        dirs(one, "      - { path: /a, stripe_count: 0 }\n"),
        "cluster.layout.directories[0].stripe_count: 0 is outside 1..=3 (the number of \
             data servers)"
    );
    let e = dirs(one, "      - { path: /a, stripe_size: 64 }\n");
    assert!(e.contains("stripe_size"), "{e}");
    let e = dirs(one, "      - { stripe_unit: 64 }\n");
    assert!(e.contains("path"), "{e}");
    // The same path in two exports is two directories.
    parse(&format!(
        "exports:\n{two}cluster:\n  layout:\n    directories:\n\
             \x20     - {{ path: /a }}\n      - {{ export: 2, path: /a }}\n"
    ))
    .unwrap();
}

#[test]
fn configured_secrets_must_be_long_hex_and_only_one_kind() {
    let e = parse("cluster:\n  secret: 0011\n").unwrap_err();
    assert_eq!(e.field, "cluster.secret");
    assert!(e.message.contains("at least 64 hex digits"), "{e}");
    let e = parse(&format!("cluster:\n  secret: {}zz\n", &SECRET[..62])).unwrap_err();
    assert_eq!(e.field, "cluster.secret");
    let e = parse(&format!(
        "cluster:\n  secret: {SECRET}\n  secret_file: /s\n"
    ))
    .unwrap_err();
    assert_eq!(e.field, "cluster.secret_file");
    parse(&format!("cluster:\n  secret: {SECRET}abcd\n")).unwrap();
}

#[test]
fn the_generated_secret_is_private_and_kept_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let c = ClusterConfig::default();
    let a = c.load_secret(&data).unwrap();
    assert_eq!(a.as_bytes().len(), SECRET_LEN);
    let path = data.join(SECRET_FILE);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        c.load_secret(&data).unwrap(),
        a,
        "a restart reads the same secret"
    );
    assert_eq!(format!("{a:?}"), "ClusterSecret(<32 bytes>)");
    let other = ClusterConfig::default()
        .load_secret(&dir.path().join("other"))
        .unwrap();
    assert_ne!(other, a, "another data directory gets its own secret");
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from(SECRET_FILE)]);
}

#[test]
fn a_secret_file_others_can_read_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    std::fs::write(&path, format!("{SECRET}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let c = ClusterConfig {
        secret_file: Some(path.clone()),
        ..ClusterConfig::default()
    };
    let e = c.load_secret(dir.path()).unwrap_err();
    assert_eq!(e.field, "cluster.secret_file");
    assert!(e.message.contains("mode 0644"), "{e}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(c.load_secret(dir.path()).unwrap().as_bytes().len(), 32);
}

#[test]
fn an_inline_secret_needs_a_config_file_only_its_owner_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pnfs.yaml");
    std::fs::write(&path, format!("cluster:\n  secret: {SECRET}\n")).unwrap();
    for mode in [0o644, 0o640, 0o604, 0o620] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let e = Config::load(&path).unwrap_err();
        assert_eq!(e.field, "cluster.secret", "{mode:o}");
        let m = &e.message;
        assert!(m.contains(&format!("mode {mode:04o}")), "{e}");
        assert!(m.contains("chmod 600") && m.contains("secret_file"), "{e}");
        assert!(m.contains(&path.display().to_string()), "{e}");
        assert!(!m.contains(SECRET), "the secret is never printed: {e}");
    }
    for mode in [0o600, 0o400] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let c = Config::load(&path).unwrap();
        assert_eq!(c.cluster.secret.as_deref(), Some(SECRET), "{mode:o}");
    }
    // Without an inline secret the file may be world-readable, as before.
    std::fs::write(&path, "cluster:\n  secret_file: /etc/pnfs/secret\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    Config::load(&path).unwrap();
}

#[test]
fn the_default_ring_tells_each_client_the_address_it_reached_the_mds_by() {
    let c = parse("").unwrap();
    let ring = c.cluster.ring(1);
    assert_eq!(
        ring.servers.iter().map(|s| s.id).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    let via: IpAddr = "192.168.7.1".parse().unwrap();
    let dev = ring.device(3, 0).unwrap();
    let body = ring.describe(&dev, via, false).unwrap();
    let addrs: Vec<String> = body
        .nflda_multipath_ds_list
        .iter()
        .map(|m| m.0[0].na_r_addr.to_string())
        .collect();
    assert_eq!(
        addrs,
        vec![
            "192.168.7.1.80.11",
            "192.168.7.1.80.12",
            "192.168.7.1.80.13"
        ]
    );
}

#[test]
fn flex_files_is_chosen_per_export_with_a_stripe_count_of_one() {
    let c = parse(
        "exports:\n  - id: 1\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
         cluster:\n  layout:\n    exports:\n      - { export: 2, layout_type: flex_files }\n",
    )
    .unwrap();
    let files = c.cluster.layout_for(1).unwrap();
    assert_eq!((files.flex_files, files.stripe_count), (false, 3));
    let flex = c.cluster.layout_for(2).unwrap();
    assert_eq!((flex.flex_files, flex.stripe_count), (true, 1));
    let all = parse("cluster:\n  layout:\n    layout_type: flex_files\n").unwrap();
    assert!(all.cluster.layout_for(1).unwrap().flex_files);
    let e = parse("cluster:\n  layout:\n    layout_type: flex_files\n    stripe_count: 2\n")
        .unwrap_err();
    assert_eq!(e.field, "cluster.layout.stripe_count");
    assert!(e.message.contains("stripe count 1"), "{e}");
    let e = parse(
        "cluster:\n  layout:\n    exports:\n      - { export: 1, layout_type: flex_files, stripe_count: 3 }\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "cluster.layout.exports[0].stripe_count");
    let e = parse(
        "cluster:\n  layout:\n    layout_type: flex_files\n    directories:\n      - { path: /d, stripe_count: 2 }\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "cluster.layout.directories[0].stripe_count");
    let e = parse("cluster:\n  layout:\n    layout_type: blocks\n").unwrap_err();
    assert!(e.to_string().contains("layout_type"), "{e}");
}

#[test]
fn mirrors_come_from_the_export_or_directory_and_need_flex_files() {
    let c = parse(
        "exports:\n  - id: 1\n  - id: 2\n    path: /scratch\n    pseudo: /scratch\n\
         cluster:\n  layout:\n    layout_type: flex_files\n    mirrors: 2\n    exports:\n      \
         - { export: 2, layout_type: files }\n    directories:\n      - { path: /m3, mirrors: 3 }\n",
    )
    .unwrap();
    assert_eq!(c.cluster.layout_for(1).unwrap().mirrors, 2);
    assert_eq!(c.cluster.layout_for(2).unwrap().mirrors, 1);
    let dir = &c.cluster.layout.directories[0];
    assert_eq!(c.cluster.layout_for_directory(1, dir).unwrap().mirrors, 3);
    let e = parse("cluster:\n  layout:\n    mirrors: 2\n").unwrap_err();
    assert_eq!(e.field, "cluster.layout.mirrors");
    assert!(e.message.contains("flex_files"), "{e}");
    let e =
        parse("cluster:\n  layout:\n    layout_type: flex_files\n    mirrors: 4\n").unwrap_err();
    assert!(e.message.contains("1..=3"), "{e}");
    let e = parse("cluster:\n  layout:\n    directories:\n      - { path: /d, mirrors: 2 }\n")
        .unwrap_err();
    assert_eq!(e.field, "cluster.layout.directories[0].mirrors");
}

#[test]
fn failure_domains_interleave_the_ring_so_consecutive_servers_are_in_different_ones() {
    let domains = |spec: &[(u16, Option<&str>)]| ClusterConfig {
        data_servers: spec
            .iter()
            .map(|&(id, d)| DataServerConfig {
                failure_domain: d.map(str::to_owned),
                ..DataServerConfig::new(id, SocketAddr::from(([0, 0, 0, 0], 20490 + id)))
            })
            .collect(),
        ..ClusterConfig::default()
    };
    // No domain named: ascending ids, the ring every store recorded before domains.
    let c = domains(&[(3, None), (1, None), (2, None)]);
    assert_eq!(c.ring_order(), [1, 2, 3]);
    // Two racks of three, numbered rack by rack: the racks take turns.
    let a = Some("rack-a");
    let b = Some("rack-b");
    let c = domains(&[(1, a), (2, a), (3, a), (4, b), (5, b), (6, b)]);
    assert_eq!(c.ring_order(), [1, 4, 2, 5, 3, 6]);
    let ring = c.ring(1);
    assert_eq!(
        ring.servers.iter().map(|s| s.id).collect::<Vec<_>>(),
        [1, 4, 2, 5, 3, 6]
    );
    assert_eq!(ring.servers[1].failure_domain.as_deref(), Some("rack-b"));
    // Uneven: the larger domain goes first and never twice in a row while another has
    // servers; a server without a domain is one of its own.
    let c = domains(&[(1, a), (2, a), (3, a), (4, a), (5, b), (6, None)]);
    assert_eq!(c.ring_order(), [1, 5, 2, 6, 3, 4]);
    // Parsed, and an empty name refused.
    let cfg = parse(
        "cluster:\n  data_servers:\n    - { id: 1, addresses: [0.0.0.0:20491], failure_domain: r1 }\n\
         \x20   - { id: 2, addresses: [0.0.0.0:20492], failure_domain: r1 }\n\
         \x20   - { id: 3, addresses: [0.0.0.0:20493], failure_domain: r2 }\n",
    )
    .unwrap();
    assert_eq!(cfg.cluster.ring_order(), [1, 3, 2]);
    let e = parse(
        "cluster:\n  data_servers:\n    - { id: 1, addresses: [0.0.0.0:20491], failure_domain: ' ' }\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "cluster.data_servers[0].failure_domain");
}
