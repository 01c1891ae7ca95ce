//! Tests against real peers (skeleton): the stock Linux client in a qemu guest and nfs-ganesha.
//! Not built yet: see the README for the state of each part.
