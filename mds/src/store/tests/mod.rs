//! Tests of the store's operations and durability.
