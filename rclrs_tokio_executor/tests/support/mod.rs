//! Test support shared by the integration tests of this crate.
#![allow(dead_code)]

pub mod capture_runtime;
pub mod ffi;
