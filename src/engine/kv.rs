//! What the key-value engines share (to be written).
