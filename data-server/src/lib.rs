//! The data server (skeleton). Not built yet: see the README for the state of each part.

pub mod control;
