//! docs/architecture.md names only what exists: every file it mentions is
//! in the tree, and every type, and every function it names with its type
//! (`RecordStore::update_record`), is defined in `src/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Words in code spans that are no names of engram's code: HTTP header
/// names and the like.
const NOT_CODE: [&str; 6] = [
    "Host",
    "Origin",
    "Authorization",
    "Bearer",
    "Accept",
    "Retry",
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Every name defined in the Rust sources: items, enum variants, fields.
fn defined(sources: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for text in sources {
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if matches!(
                pair[0],
                "struct" | "enum" | "trait" | "type" | "fn" | "const" | "static" | "mod"
            ) {
                names.insert(pair[1].to_string());
            }
        }
        for line in text.lines() {
            let line = line.trim_start();
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let rest = &line[name.len()..];
            // Enum variants and struct fields.
            if !name.is_empty()
                && (rest.starts_with(',')
                    || rest.starts_with(" {")
                    || rest.starts_with('(')
                    || rest.starts_with(':'))
            {
                names.insert(name);
            }
        }
    }
    names
}

#[test]
fn the_architecture_document_names_only_what_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut tree = Vec::new();
    files(&root.join("src"), &mut tree);
    files(&root.join("migrations"), &mut tree);
    files(&root.join("tests"), &mut tree);
    let tree: Vec<String> = tree
        .iter()
        .map(|p| p.strip_prefix(root).unwrap().display().to_string())
        .collect();
    let sources: Vec<String> = tree
        .iter()
        .filter(|p| p.ends_with(".rs"))
        .map(|p| std::fs::read_to_string(root.join(p)).unwrap())
        .collect();
    let names = defined(&sources);
    let mut missing = Vec::new();
    let mut checked = 0;

    // Files: `src/...`, `http/ingest.rs`, `0003_versions.sql`, anywhere.
    let tokens = doc.split(|c: char| c.is_whitespace() || "`(),;|".contains(c));
    for token in tokens {
        let token = token.trim_end_matches([':', '.']);
        if !(token.ends_with(".rs") || token.ends_with(".sql")) {
            continue;
        }
        checked += 1;
        let suffix = format!("/{}", token.trim_start_matches("src/"));
        if !tree
            .iter()
            .any(|p| p == token || p.ends_with(&suffix) || *p == format!("src/{token}"))
        {
            missing.push(format!("file {token}"));
        }
    }

    // Names: a code span's CamelCase words, and `Type::function` anywhere.
    let mut wanted = BTreeSet::new();
    // Fences are not code spans: left out, the spans alternate.
    let spans: String = doc
        .lines()
        .filter(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n");
    for (i, span) in spans.split('`').enumerate() {
        let in_code = i % 2 == 1;
        for word in span.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')) {
            let word = word.trim_matches(':');
            let mut parts = word.split("::").filter(|p| !p.is_empty());
            let Some(first) = parts.next() else { continue };
            let camel = first.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && first.chars().any(|c| c.is_ascii_lowercase());
            let path: Vec<&str> = parts.collect();
            if camel && (in_code || !path.is_empty()) && !NOT_CODE.contains(&first) {
                wanted.insert(first.to_string());
                wanted.extend(path.iter().map(|p| p.to_string()));
            }
        }
    }
    for name in &wanted {
        checked += 1;
        if !names.contains(name) {
            missing.push(format!("name {name}"));
        }
    }
    assert!(checked > 100, "only {checked} names checked");
    assert!(
        missing.is_empty(),
        "docs/architecture.md names what is not in the tree: {missing:?}"
    );
}

#[test]
fn every_long_source_file_is_one_piece_the_architecture_document_explains() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let one_piece = doc
        .split("## Files that stay one piece")
        .nth(1)
        .expect("the section on long files");
    let mut tree = Vec::new();
    files(&root.join("src"), &mut tree);
    let unexplained: Vec<String> = tree
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .filter(|path| std::fs::read_to_string(path).unwrap().lines().count() > 700)
        .map(|path| {
            path.strip_prefix(root.join("src"))
                .unwrap()
                .display()
                .to_string()
        })
        .filter(|name| !one_piece.contains(&format!("`{name}`")))
        .collect();
    assert!(
        unexplained.is_empty(),
        "over 700 lines with no word in docs/architecture.md on why: {unexplained:?}"
    );
}

/// The layers of docs/architecture.md's first table, top first: each with
/// the folders (`src/http/`) and files (`src/error.rs`) it names.
fn layers(document: &str) -> Vec<(String, Vec<String>)> {
    document
        .lines()
        .skip_while(|line| !line.starts_with("| layer |"))
        .skip(2)
        .take_while(|line| line.starts_with('|'))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let places = cells[2]
                .split('`')
                .skip(1)
                .step_by(2)
                .filter(|place| place.starts_with("src/"))
                .map(str::to_string)
                .collect();
            (cells[1].to_string(), places)
        })
        .collect()
}

/// Which of `layers` holds `file` (a path under `src/`): the longest
/// place that names it or a folder of it.
fn layer_of(layers: &[(String, Vec<String>)], file: &str) -> Option<usize> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, places))| places.iter().map(move |place| (i, place)))
        .filter(|(_, place)| {
            file == place.as_str() || (place.ends_with('/') && file.starts_with(place.as_str()))
        })
        .max_by_key(|(_, place)| place.len())
        .map(|(i, _)| i)
}

#[test]
fn every_import_points_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let document = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = layers(&document);
    assert!(
        layers.len() >= 5,
        "no layer table in docs/architecture.md: {layers:?}"
    );
    let mut sources = Vec::new();
    files(&root.join("src"), &mut sources);
    let mut unplaced = Vec::new();
    let mut upward = BTreeSet::new();
    for path in sources
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let file = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Some(from) = layer_of(&layers, &file) else {
            unplaced.push(file);
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (at, _) in line.match_indices("crate::") {
                let module: String = line[at + 7..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let target = [format!("src/{module}/mod.rs"), format!("src/{module}.rs")]
                    .into_iter()
                    .find_map(|candidate| layer_of(&layers, &candidate));
                match target {
                    Some(to) if to < from => {
                        upward.insert(format!(
                            "{file} ({}) uses crate::{module} ({})",
                            layers[from].0, layers[to].0
                        ));
                    }
                    Some(_) => {}
                    None => unplaced.push(format!("crate::{module}, used in {file}")),
                }
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "in no layer of docs/architecture.md: {unplaced:?}"
    );
    assert!(upward.is_empty(), "imports that point up: {upward:#?}");
}
