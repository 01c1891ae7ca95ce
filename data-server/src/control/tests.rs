//! Tests of the control service's helpers.

use super::*;

#[test]
fn universal_addresses_put_the_port_in_two_decimal_bytes() {
    let a = universal_address("127.0.0.1:20491".parse().unwrap());
    assert_eq!(
        (a.netid.as_str(), a.uaddr.as_str()),
        (Some("tcp"), Some("127.0.0.1.80.11"))
    );
    let a = universal_address("[fd00::4]:2049".parse().unwrap());
    assert_eq!(
        (a.netid.as_str(), a.uaddr.as_str()),
        (Some("tcp6"), Some("fd00::4.8.1"))
    );
}
