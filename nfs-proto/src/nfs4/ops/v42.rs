//! See the module list in `ops/mod.rs`.
