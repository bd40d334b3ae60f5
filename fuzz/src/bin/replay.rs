//! Runs the fuzz target's check on the stable toolchain.
//!
//! ```text
//! replay <COUNT> [SEED]      COUNT random and mutated queries (default seed 1)
//! replay <DIR or FILE>...    every file (recursively) as one input, e.g. a libFuzzer corpus
//! replay --seeds <DIR>       writes the hand-made seed corpus to DIR
//! ```
//! A failing input is written to `replay-crash-<n>.bin` in the current directory before the
//! panic is re-raised.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::time::Instant;

use dnz_fuzz::{Rng, check, random_input, self_test, snapshot, valid_query};
use model::Snapshot;

fn run(snapshot: &Snapshot, data: &[u8], out: &mut Vec<u8>, index: u64) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| check(snapshot, data, out))) {
        let path = format!("replay-crash-{index}.bin");
        let _ = std::fs::write(&path, data);
        eprintln!("input {index} failed; written to {path}: {data:02x?}");
        resume_unwind(panic);
    }
}

fn files(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for entry in entries {
            files(&entry, found);
        }
    } else {
        found.push(path.to_path_buf());
    }
}

fn write_seeds(dir: &Path) {
    std::fs::create_dir_all(dir).expect("create seed dir");
    let mut rng = Rng(0x5eed);
    for i in 0..64 {
        let query = valid_query(&mut rng);
        std::fs::write(dir.join(format!("query-{i:02}")), query).expect("write seed");
    }
    println!("wrote 64 seeds to {}", dir.display());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--seeds") {
        write_seeds(Path::new(args.get(1).map_or("seeds/query", String::as_str)));
        return;
    }
    let snapshot = snapshot();
    self_test(&snapshot);
    let mut out = Vec::with_capacity(65535);
    let started = Instant::now();
    let (mut inputs, mut dropped, mut answered) = (0u64, 0u64, 0u64);
    let mut count_one = |data: &[u8], out: &mut Vec<u8>, inputs: &mut u64| {
        run(&snapshot, data, out, *inputs);
        *inputs += 1;
        if out.is_empty() {
            dropped += 1;
        } else {
            answered += 1;
        }
    };
    match args.first().and_then(|a| a.parse::<u64>().ok()) {
        Some(count) => {
            let seed = args.get(1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(1);
            let mut rng = Rng(seed.max(1));
            for _ in 0..count {
                let data = random_input(&mut rng);
                count_one(&data, &mut out, &mut inputs);
            }
        }
        None => {
            if args.is_empty() {
                eprintln!(
                    "usage: replay <COUNT> [SEED] | replay <DIR or FILE>... | replay --seeds <DIR>"
                );
                std::process::exit(2);
            }
            let mut found = Vec::new();
            for arg in &args {
                files(Path::new(arg), &mut found);
            }
            for path in found {
                let data =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                count_one(&data, &mut out, &mut inputs);
            }
        }
    }
    println!(
        "{inputs} inputs ({answered} answered, {dropped} dropped) in {:.2?}, no failure",
        started.elapsed()
    );
}
