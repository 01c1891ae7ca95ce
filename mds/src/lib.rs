//! The metadata server (skeleton). Not built yet: see the README for the state of each part.
