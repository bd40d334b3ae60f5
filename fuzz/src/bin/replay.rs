//! Runs the fuzz targets' checks on the stable toolchain.
//!
//! ```text
//! replay <COUNT> [SEED]              COUNT random and mutated queries (default seed 1)
//! replay <DIR or FILE>...            every file (recursively) as one query, e.g. a corpus
//! replay --seeds <DIR>               writes the hand-made query seeds to DIR
//! replay --image <COUNT> [SEED]      COUNT mutations of the seed images (default seed 1)
//! replay --image <DIR or FILE>...    every file as an image body (the image target's input)
//! replay --image --seeds <DIR>       writes the seed images to DIR
//! replay --zonefile <COUNT> [SEED]   COUNT mutations of the seed zone files (default seed 1)
//! replay --zonefile <DIR or FILE>... every file as a zone file (the zonefile target's input)
//! ```
//! A failing input is written to `replay-crash-<n>.bin` in the current directory before the
//! panic is re-raised.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::{Path, PathBuf};
use std::time::Instant;

use dnz_fuzz::{
    Rng, ZONEFILE_SEEDS, ZonefileOutcome, check, check_image, check_zonefile, image_self_test,
    mutated_image, mutated_zonefile, random_input, seed_images, self_test, snapshot, valid_query,
    zonefile_self_test,
};
use model::Snapshot;

/// Runs `check` on `data`; on a panic, saves `data` first.
fn run(data: &[u8], index: u64, check: impl FnOnce()) {
    if let Err(panic) = catch_unwind(AssertUnwindSafe(check)) {
        let path = format!("replay-crash-{index}.bin");
        let _ = std::fs::write(&path, data);
        if data.len() <= 512 {
            eprintln!("input {index} failed; written to {path}: {data:02x?}");
        } else {
            eprintln!(
                "input {index} failed; written to {path} ({} bytes)",
                data.len()
            );
        }
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

fn write_image_seeds(dir: &Path) {
    std::fs::create_dir_all(dir).expect("create seed dir");
    let seeds = seed_images();
    for (name, body) in &seeds {
        std::fs::write(dir.join(format!("{name}.img")), body).expect("write seed");
    }
    println!("wrote {} seed images to {}", seeds.len(), dir.display());
}

/// What each input is checked as.
enum Target {
    Query(Snapshot),
    Image,
    /// Counts the zone files that parsed but did not validate.
    Zonefile {
        invalid: std::cell::Cell<u64>,
    },
}

impl Target {
    /// Checks one input; true when it was answered (query), read (image) or served (zonefile).
    fn check(&self, data: &[u8], out: &mut Vec<u8>, index: u64) -> bool {
        match self {
            Target::Query(snapshot) => {
                run(data, index, || check(snapshot, data, out));
                !out.is_empty()
            }
            Target::Image => {
                let mut read = false;
                run(data, index, || read = check_image(data, out));
                read
            }
            Target::Zonefile { invalid } => {
                let mut outcome = ZonefileOutcome::Refused;
                run(data, index, || outcome = check_zonefile(data, out));
                if outcome == ZonefileOutcome::Invalid {
                    invalid.set(invalid.get() + 1);
                }
                outcome == ZonefileOutcome::Served
            }
        }
    }
}

/// The images that `--image <COUNT>` mutates: the files in `seeds/image`, so that a seed
/// gives the same inputs on every run (a compile picks a random hash seed); freshly written
/// ones when there are none.
fn image_seeds() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/image");
    let mut found = Vec::new();
    if dir.is_dir() {
        files(&dir, &mut found);
    }
    if found.is_empty() {
        eprintln!("no seed images in {}; mutating new ones", dir.display());
        return seed_images().into_iter().map(|(_, body)| body).collect();
    }
    found
        .iter()
        .map(|path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .collect()
}

fn usage() -> ! {
    eprintln!(
        "usage: replay [--image|--zonefile] <COUNT> [SEED] | \
         replay [--image|--zonefile] <DIR or FILE>... | replay [--image] --seeds <DIR>"
    );
    std::process::exit(2);
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let image = args.first().map(String::as_str) == Some("--image");
    let zonefile = args.first().map(String::as_str) == Some("--zonefile");
    if image || zonefile {
        args.remove(0);
    }
    if args.first().map(String::as_str) == Some("--seeds") {
        if zonefile {
            // The zone file seeds are written by hand (and built into the binary).
            usage();
        }
        let dir = args.get(1).map(String::as_str);
        if image {
            write_image_seeds(Path::new(dir.unwrap_or("seeds/image")));
        } else {
            write_seeds(Path::new(dir.unwrap_or("seeds/query")));
        }
        return;
    }
    if args.is_empty() {
        usage();
    }
    let target = if image {
        image_self_test();
        Target::Image
    } else if zonefile {
        zonefile_self_test();
        Target::Zonefile {
            invalid: std::cell::Cell::new(0),
        }
    } else {
        let snapshot = snapshot();
        self_test(&snapshot);
        Target::Query(snapshot)
    };
    let seeds = match target {
        Target::Image => image_seeds(),
        Target::Query(_) | Target::Zonefile { .. } => Vec::new(),
    };
    let zonefile_seeds: Vec<&str> = ZONEFILE_SEEDS.iter().map(|(_, text)| *text).collect();
    let mut out = Vec::with_capacity(65535);
    let started = Instant::now();
    let (mut inputs, mut passed) = (0u64, 0u64);
    let mut one = |data: &[u8]| {
        passed += u64::from(target.check(data, &mut out, inputs));
        inputs += 1;
    };
    match args.first().and_then(|a| a.parse::<u64>().ok()) {
        Some(count) => {
            let seed = args.get(1).and_then(|s| s.parse::<u64>().ok()).unwrap_or(1);
            let mut rng = Rng(seed.max(1));
            for _ in 0..count {
                let data = if image {
                    mutated_image(&mut rng, &seeds)
                } else if zonefile {
                    mutated_zonefile(&mut rng, &zonefile_seeds)
                } else {
                    random_input(&mut rng)
                };
                one(&data);
            }
        }
        None => {
            let mut found = Vec::new();
            for arg in &args {
                files(Path::new(arg), &mut found);
            }
            for path in found {
                let data =
                    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                one(&data);
            }
        }
    }
    let refused = inputs - passed;
    let summary = match &target {
        Target::Image => format!("{passed} read, {refused} refused"),
        Target::Zonefile { invalid } => format!(
            "{passed} served, {} invalid, {} refused",
            invalid.get(),
            refused - invalid.get()
        ),
        Target::Query(_) => format!("{passed} answered, {refused} dropped"),
    };
    println!(
        "{inputs} inputs ({summary}) in {:.2?}, no failure",
        started.elapsed()
    );
}
