//! The exports and the pseudo file system that joins them (RFC 8881 section 7.3).
//!
//! Clients see one tree. Each export is grafted at its `pseudo` path; the directories above
//! the exports that no export covers are *pseudo nodes*: read-only, synthesized directories
//! whose only entries lead towards exports (as knfsd's `fsid=0` root and ganesha's pseudo
//! fs). When an export sits at `/` (the all-in-one default), its root *is* the pseudo-root and
//! other exports are grafted onto directories of its root (junctions), which is the one level
//! of nesting supported: an export may not sit deeper inside another export, because that
//! would need a path walk on every LOOKUP to find the junction (config rejects it, naming the
//! field).
//!
//! The table is built once from the config and never changes while the server runs, so the
//! places here are plain indices. Pseudo nodes get file ids derived from their path with the
//! top bit set (store file ids are counters that never reach it), so their handles stay valid
//! across restarts and config reorderings.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use crate::config::{normalize, Access, ConfigError, ExportConfig, Network};

/// Export id of pseudo-fs handles (export ids in the config are 1..=65535).
pub const PSEUDO_EXPORT: u16 = 0;

/// Where a name of the joined tree leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// A pseudo node, by index.
    Pseudo(usize),
    /// The root of an export, by export id.
    Export(u16),
}

/// One export, with its access rules parsed.
#[derive(Debug, Clone)]
pub struct Export {
    /// Export id (part of every filehandle).
    pub id: u16,
    /// Components of the exported directory in the server's namespace.
    pub path: Vec<String>,
    /// Normalized pseudo path (`/`, `/a/b`).
    pub pseudo: String,
    /// Access rules, first match wins.
    pub rules: Vec<Rule>,
}

/// What one client network may do with an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The clients it applies to.
    pub network: Network,
    /// Changes get NFS4ERR_ROFS.
    pub read_only: bool,
    /// uid 0 is mapped to the anonymous user.
    pub root_squash: bool,
}

#[derive(Debug)]
struct Node {
    fileid: u64,
    parent: Option<Place>,
    children: BTreeMap<String, Place>,
}

/// All exports and the pseudo tree above them.
#[derive(Debug)]
pub struct Exports {
    exports: Vec<Export>,
    nodes: Vec<Node>,
    by_fileid: HashMap<u64, usize>,
    root: Place,
    /// Junctions in export roots: export id -> name -> place.
    junctions: HashMap<u16, BTreeMap<String, Place>>,
    /// Where each export root sits: its parent place (None for the root).
    export_parent: HashMap<u16, Option<Place>>,
}

/// The stable file id of a pseudo path: a hash with the top bit set.
pub fn pseudo_fileid(path: &str) -> u64 {
    let h = blake3::hash(path.as_bytes());
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.as_bytes()[..8]);
    u64::from_be_bytes(b) | (1 << 63)
}

fn components(p: &str) -> Vec<String> {
    p.split('/')
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

fn join(parts: &[String]) -> String {
    format!("/{}", parts.join("/"))
}

fn err(field: String, message: String) -> ConfigError {
    ConfigError { field, message }
}

impl Exports {
    /// Builds the joined tree. Errors name the export's field.
    pub fn new(cfgs: &[ExportConfig]) -> Result<Self, ConfigError> {
        let mut exports = Vec::with_capacity(cfgs.len());
        for (i, e) in cfgs.iter().enumerate() {
            let mut rules = Vec::with_capacity(e.clients.len());
            for (j, c) in e.clients.iter().enumerate() {
                let network = Network::parse(&c.network)
                    .map_err(|m| err(format!("exports[{i}].clients[{j}].network"), m))?;
                rules.push(Rule {
                    network,
                    read_only: c.access == Access::Ro,
                    root_squash: c.root_squash,
                });
            }
            exports.push(Export {
                id: e.id,
                path: components(&e.path),
                pseudo: normalize(&e.pseudo),
                rules,
            });
        }
        let by_pseudo: HashMap<String, u16> =
            exports.iter().map(|e| (e.pseudo.clone(), e.id)).collect();
        // An export may not sit below another export's root except directly in it.
        for (i, e) in exports.iter().enumerate() {
            let parts = components(&e.pseudo);
            for k in 0..parts.len().saturating_sub(1) {
                let prefix = join(&parts[..k]);
                if let Some(&other) = by_pseudo.get(&prefix) {
                    return Err(err(
                        format!("exports[{i}].pseudo"),
                        format!(
                            "{:?} lies inside export {other} (at {prefix:?}) below its root; \
                             an export may be grafted only directly in another export's root",
                            e.pseudo
                        ),
                    ));
                }
            }
        }
        let mut t = Self {
            nodes: Vec::new(),
            by_fileid: HashMap::new(),
            root: Place::Pseudo(0),
            junctions: HashMap::new(),
            export_parent: HashMap::new(),
            exports,
        };
        t.root = match by_pseudo.get("/") {
            Some(&id) => Place::Export(id),
            None => t.pseudo_node("/", None),
        };
        t.export_parent.insert(
            match t.root {
                Place::Export(id) => id,
                Place::Pseudo(_) => PSEUDO_EXPORT,
            },
            None,
        );
        let mut order: Vec<(String, u16)> = t
            .exports
            .iter()
            .filter(|e| e.pseudo != "/")
            .map(|e| (e.pseudo.clone(), e.id))
            .collect();
        order.sort();
        for (pseudo, id) in order {
            let parts = components(&pseudo);
            let mut at = t.root;
            for (k, name) in parts.iter().enumerate() {
                let name = name.clone();
                let last = k + 1 == parts.len();
                let existing = t.children_mut(at).get(&name).copied();
                at = match existing {
                    Some(p) => p,
                    None => {
                        let place = if last {
                            t.export_parent.insert(id, Some(at));
                            Place::Export(id)
                        } else {
                            t.pseudo_node(&join(&parts[..=k]), Some(at))
                        };
                        t.children_mut(at).insert(name, place);
                        place
                    }
                };
            }
        }
        Ok(t)
    }

    fn pseudo_node(&mut self, path: &str, parent: Option<Place>) -> Place {
        let fileid = pseudo_fileid(path);
        self.by_fileid.insert(fileid, self.nodes.len());
        self.nodes.push(Node {
            fileid,
            parent,
            children: BTreeMap::new(),
        });
        Place::Pseudo(self.nodes.len() - 1)
    }

    fn children_mut(&mut self, at: Place) -> &mut BTreeMap<String, Place> {
        match at {
            Place::Pseudo(i) => &mut self.nodes[i].children,
            Place::Export(id) => self.junctions.entry(id).or_default(),
        }
    }

    /// The root of the joined tree (PUTROOTFH).
    pub fn root(&self) -> Place {
        self.root
    }

    /// Every export.
    pub fn all(&self) -> &[Export] {
        &self.exports
    }

    /// The export with id `id`.
    pub fn get(&self, id: u16) -> Option<&Export> {
        self.exports.iter().find(|e| e.id == id)
    }

    /// The pseudo node with this file id.
    pub fn pseudo_by_fileid(&self, fileid: u64) -> Option<usize> {
        self.by_fileid.get(&fileid).copied()
    }

    /// A pseudo node's file id.
    pub fn pseudo_fileid_of(&self, node: usize) -> u64 {
        self.nodes[node].fileid
    }

    /// Entries of a pseudo node, in name order.
    pub fn pseudo_children(&self, node: usize) -> impl Iterator<Item = (&str, Place)> {
        self.nodes[node]
            .children
            .iter()
            .map(|(n, p)| (n.as_str(), *p))
    }

    /// Where `name` leads from `at`, if it is a pseudo entry or a junction.
    pub fn child(&self, at: Place, name: &str) -> Option<Place> {
        match at {
            Place::Pseudo(i) => self.nodes[i].children.get(name).copied(),
            Place::Export(id) => self.junctions.get(&id)?.get(name).copied(),
        }
    }

    /// Junction names in the root of export `id` (the all-in-one `/` export with others
    /// grafted onto it).
    pub fn junctions(&self, id: u16) -> impl Iterator<Item = (&str, Place)> {
        self.junctions
            .get(&id)
            .into_iter()
            .flat_map(|m| m.iter().map(|(n, p)| (n.as_str(), *p)))
    }

    /// The place above `at`: None at the root of the joined tree.
    pub fn parent(&self, at: Place) -> Option<Place> {
        match at {
            Place::Pseudo(i) => self.nodes[i].parent,
            Place::Export(id) => self.export_parent.get(&id).copied().flatten(),
        }
    }

    /// The rule for a client at `ip` on export `id`, if it may use it at all.
    pub fn rule(&self, id: u16, ip: IpAddr) -> Option<Rule> {
        self.get(id)?
            .rules
            .iter()
            .find(|r| r.network.contains(ip))
            .copied()
    }

    /// Whether a client at `ip` may reach anything through `place`: pseudo entries that lead
    /// only to exports it may not use are hidden from it.
    pub fn admits(&self, place: Place, ip: IpAddr) -> bool {
        match place {
            Place::Export(id) => self.rule(id, ip).is_some(),
            Place::Pseudo(i) => self.nodes[i].children.values().any(|&c| self.admits(c, ip)),
        }
    }

    /// Whether a client at `ip` may use any export (and so see the pseudo tree).
    pub fn any_allowed(&self, ip: IpAddr) -> bool {
        self.exports
            .iter()
            .any(|e| e.rules.iter().any(|r| r.network.contains(ip)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ClientRule;

    fn export(id: u16, path: &str, pseudo: &str) -> ExportConfig {
        ExportConfig {
            id,
            path: path.into(),
            pseudo: pseudo.into(),
            clients: vec![ClientRule {
                network: "10.0.0.0/8".into(),
                access: Access::Ro,
                root_squash: true,
            }],
            delegations: None,
        }
    }

    #[test]
    fn one_export_at_slash_is_the_root() {
        let t = Exports::new(&[export(1, "/", "/")]).unwrap();
        assert_eq!(t.root(), Place::Export(1));
        assert_eq!(t.parent(Place::Export(1)), None);
        assert_eq!(t.child(Place::Export(1), "x"), None);
    }

    #[test]
    fn exports_without_a_root_export_hang_from_pseudo_nodes() {
        let t = Exports::new(&[
            export(1, "/home", "/home"),
            export(2, "/s", "/data/scratch"),
        ])
        .unwrap();
        let Place::Pseudo(root) = t.root() else {
            panic!("root should be a pseudo node")
        };
        let names: Vec<_> = t.pseudo_children(root).map(|(n, _)| n.to_owned()).collect();
        assert_eq!(names, ["data", "home"]);
        assert_eq!(t.child(t.root(), "home"), Some(Place::Export(1)));
        let data = t.child(t.root(), "data").unwrap();
        assert!(matches!(data, Place::Pseudo(_)));
        assert_eq!(t.child(data, "scratch"), Some(Place::Export(2)));
        assert_eq!(t.parent(Place::Export(2)), Some(data));
        assert_eq!(t.parent(data), Some(t.root()));
        assert_eq!(t.parent(t.root()), None);
        assert_eq!(t.child(t.root(), "nothing"), None);
    }

    #[test]
    fn pseudo_fileids_are_stable_and_outside_the_store_range() {
        let a = Exports::new(&[export(1, "/a", "/x/a"), export(2, "/b", "/x/b")]).unwrap();
        let b = Exports::new(&[export(2, "/b", "/x/b"), export(1, "/a", "/x/a")]).unwrap();
        let Place::Pseudo(x1) = a.child(a.root(), "x").unwrap() else {
            panic!()
        };
        let Place::Pseudo(x2) = b.child(b.root(), "x").unwrap() else {
            panic!()
        };
        assert_eq!(a.pseudo_fileid_of(x1), b.pseudo_fileid_of(x2));
        assert!(a.pseudo_fileid_of(x1) >> 63 == 1);
        assert_eq!(a.pseudo_by_fileid(a.pseudo_fileid_of(x1)), Some(x1));
    }

    #[test]
    fn an_export_at_slash_carries_the_others_as_junctions() {
        let t = Exports::new(&[export(1, "/", "/"), export(2, "/scratch", "/scratch")]).unwrap();
        assert_eq!(t.child(Place::Export(1), "scratch"), Some(Place::Export(2)));
        assert_eq!(t.parent(Place::Export(2)), Some(Place::Export(1)));
        let j: Vec<_> = t.junctions(1).collect();
        assert_eq!(j, [("scratch", Place::Export(2))]);
    }

    #[test]
    fn an_export_deep_inside_another_is_refused_naming_the_field() {
        let e = Exports::new(&[export(1, "/", "/"), export(2, "/s", "/a/b")]).unwrap_err();
        assert_eq!(e.field, "exports[1].pseudo");
        assert!(e.message.contains("inside export 1"), "{}", e.message);
    }

    #[test]
    fn rules_match_by_network_first_match_wins() {
        let t = Exports::new(&[export(1, "/", "/")]).unwrap();
        let r = t.rule(1, "10.1.2.3".parse().unwrap()).unwrap();
        assert!(r.read_only && r.root_squash);
        assert_eq!(t.rule(1, "192.168.1.1".parse().unwrap()), None);
        assert!(!t.any_allowed("192.168.1.1".parse().unwrap()));
        assert_eq!(t.rule(9, "10.1.2.3".parse().unwrap()), None);
    }

    #[test]
    fn pseudo_nodes_admit_a_client_when_an_export_below_does() {
        let mut other = export(2, "/b", "/x/b");
        other.clients[0].network = "192.168.0.0/16".into();
        let t = Exports::new(&[export(1, "/a", "/y/a"), other]).unwrap();
        let x = t.child(t.root(), "x").unwrap();
        let y = t.child(t.root(), "y").unwrap();
        let ten = "10.0.0.1".parse().unwrap();
        assert!(t.admits(y, ten) && !t.admits(x, ten));
        assert!(t.admits(x, "192.168.3.4".parse().unwrap()));
        assert!(t.admits(t.root(), ten));
    }
}
