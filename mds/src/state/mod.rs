//! Protocol state, sans-IO: clients, sessions, leases, grace, stateids, opens and locks.
