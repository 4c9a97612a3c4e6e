//! The command's parts: the command line (`args`, `help`), `trickle replay` (`log`, `lines`,
//! `replay`, `redis`) and `trickle serve` (`serve/`).

pub mod args;
pub mod help;
pub mod lines;
pub mod log;
pub mod redis;
pub mod replay;
pub mod serve;
