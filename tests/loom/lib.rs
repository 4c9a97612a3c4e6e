//! Empty: the loom model is the test target `loom_packed` (packed.rs).
