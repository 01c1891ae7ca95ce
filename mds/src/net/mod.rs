//! What faces the network besides the NFSv4 program: the metrics endpoint.
pub mod metrics;
