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

/// The layers of the table in docs/architecture.md whose header begins
/// with `header`, top first: each with the folders (`src/http/`) and files
/// (`src/error.rs`) it names.
fn layers(document: &str, header: &str) -> Vec<(String, Vec<String>)> {
    document
        .lines()
        .skip_while(|line| !line.starts_with(header))
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

/// Which of `layers` holds `file` (a path under `src/`), and the longest
/// place of it that names the file or a folder of it.
fn layer_of(layers: &[(String, Vec<String>)], file: &str) -> Option<(usize, String)> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(i, (_, places))| places.iter().map(move |place| (i, place)))
        .filter(|(_, place)| {
            file == place.as_str() || (place.ends_with('/') && file.starts_with(place.as_str()))
        })
        .max_by_key(|(_, place)| place.len())
        .map(|(i, place)| (i, place.clone()))
}

#[test]
fn every_import_points_down_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let document = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = layers(&document, "| layer |");
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
        let Some((from, _)) = layer_of(&layers, &file) else {
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
                    .find_map(|candidate| layer_of(&layers, &candidate).map(|(to, _)| to));
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

/// `text` with its comments, strings and characters blanked out (their
/// length kept, so offsets still point into the file): what is left is
/// code.
fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |code: &mut String, from: &[char]| {
        for c in from {
            code.push(if *c == '\n' { '\n' } else { ' ' });
        }
    };
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            rest.iter().position(|c| *c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            (2..rest.len())
                .find(|&j| rest[j - 1] == '*' && rest[j] == '/')
                .map_or(rest.len(), |j| j + 1)
        } else if rest[0] == '"'
            || (rest[0] == 'r'
                && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'))
                && rest.iter().skip(1).take_while(|c| **c == '#').count() + 1 < rest.len()
                && rest[1 + rest.iter().skip(1).take_while(|c| **c == '#').count()] == '"')
        {
            let hashes = rest.iter().skip(1).take_while(|c| **c == '#').count();
            let raw = rest[0] == 'r';
            let open = if raw { hashes + 2 } else { 1 };
            let mut j = open;
            loop {
                if j >= rest.len() {
                    break rest.len();
                }
                if !raw && rest[j] == '\\' {
                    j += 2;
                    continue;
                }
                if rest[j] == '"' && (!raw || rest[j + 1..].iter().take(hashes).all(|c| *c == '#'))
                {
                    break j + 1 + if raw { hashes } else { 0 };
                }
                j += 1;
            }
        } else if rest[0] == '\'' && rest.len() > 2 {
            // A character ('x', '\n', '\u{..}'), not a lifetime ('a).
            if rest[1] == '\\' {
                (2..rest.len())
                    .find(|&j| rest[j] == '\'')
                    .map_or(1, |j| j + 1)
            } else if rest[2] == '\'' {
                3
            } else {
                0
            }
        } else {
            0
        };
        if end == 0 {
            code.push(rest[0]);
            i += 1;
        } else {
            blank(&mut code, &rest[..end]);
            i += end;
        }
    }
    code
}

/// The inline modules of a file's code (`mod tests { … }`): where each
/// begins and ends, its name, and whether it is compiled for tests only.
fn inline_modules(code: &str) -> Vec<(usize, usize, String, bool)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("mod ") {
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let after = &code[at + 4..];
        let name: String = after
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let rest = after.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !rest.starts_with('{') {
            continue;
        }
        let open = code.len() - rest.len();
        let mut depth = 0;
        let close = code[open..]
            .char_indices()
            .find_map(|(j, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                (depth == 0).then_some(open + j)
            })
            .unwrap_or(code.len());
        let test_only = code[..at].trim_end().ends_with("#[cfg(test)]");
        found.push((open, close, name, test_only));
    }
    found
}

/// Every path of a `use` tree (`a::{b, c::{d, e as f}}`), each as its
/// segments, a renaming left out.
fn use_paths(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let tree = tree.replace(" ::", "::").replace(":: ", "::");
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<Vec<String>>) {
        let tree = tree.trim();
        match tree.find('{') {
            None => {
                let leaf = tree.split(" as ").next().unwrap_or(tree).trim();
                let mut path = prefix.to_vec();
                path.extend(
                    leaf.split("::")
                        .filter(|s| !s.is_empty() && *s != "self" || leaf == "self")
                        .map(str::to_string),
                );
                path.retain(|s| s != "self" || prefix.is_empty());
                out.push(path);
            }
            Some(open) => {
                let mut path = prefix.to_vec();
                path.extend(
                    tree[..open]
                        .split("::")
                        .filter(|s| !s.trim().is_empty())
                        .map(|s| s.trim().to_string()),
                );
                let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
                let (mut depth, mut start) = (0, 0);
                for (j, c) in inner.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            expand(&path, &inner[start..j], out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                if !inner[start..].trim().is_empty() {
                    expand(&path, &inner[start..], out);
                }
            }
        }
    }
    let mut out = Vec::new();
    expand(&[], &tree, &mut out);
    out
}

/// The module path of a source file (`src/store/sqlite/mod.rs`:
/// `store::sqlite`), from `src/`.
fn module_of(file: &str) -> Vec<String> {
    let mut path: Vec<String> = file
        .trim_start_matches("src/")
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if path
        .last()
        .is_some_and(|last| last == "mod" || last == "lib")
    {
        path.pop();
    }
    path
}

/// The file that defines the module nearest to `path` (segments from the
/// crate root): `store::error::StoreError` is `src/store/error.rs`,
/// `store::StoreError` is `src/store/mod.rs`.
fn file_defining(root: &Path, path: &[String]) -> Option<String> {
    let mut found = None;
    for end in 1..=path.len() {
        let module = path[..end].join("/");
        let candidates = [format!("src/{module}.rs"), format!("src/{module}/mod.rs")];
        match candidates.into_iter().find(|c| root.join(c).is_file()) {
            Some(file) => found = Some(file),
            None => break,
        }
    }
    found
}

/// The files of `src/` a file's code names (its `use` trees and the
/// paths in its code that begin with `crate::`, `super::`, `self::` or
/// one of its own modules), each with the path as written and whether
/// only its tests name it.
fn imports_of(root: &Path, file: &str) -> Vec<(String, String, bool)> {
    let code = code_of(&std::fs::read_to_string(root.join(file)).unwrap());
    let modules = inline_modules(&code);
    let base = module_of(file);
    // Where `use` statements are, so their paths are read once, as trees.
    let mut statements = Vec::new();
    for (at, _) in code.match_indices("use ") {
        if at > 0 && code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(end) = code[at..].find(';') {
            statements.push((at, at + end));
        }
    }
    let mut written: Vec<(usize, Vec<String>)> = Vec::new();
    for &(start, end) in &statements {
        for path in use_paths(&code[start + 4..end]) {
            written.push((start, path));
        }
    }
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        let starts_word =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || b"_:".contains(&bytes[at - 1]));
        if !starts_word || !(bytes[at].is_ascii_alphabetic() || bytes[at] == b'_') {
            at += 1;
            continue;
        }
        let len = code[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(code.len() - at);
        let text = code[at..at + len].trim_end_matches(':');
        if text.contains("::") && !statements.iter().any(|(s, e)| (*s..*e).contains(&at)) {
            written.push((at, text.split("::").map(str::to_string).collect()));
        }
        at += len.max(1);
    }
    let mut found = Vec::new();
    for (at, path) in written {
        let inside: Vec<&(usize, usize, String, bool)> = modules
            .iter()
            .filter(|(open, close, _, _)| *open < at && at < *close)
            .collect();
        let mut here = base.clone();
        here.extend(inside.iter().map(|(_, _, name, _)| name.clone()));
        let absolute: Vec<String> = match path.first().map(String::as_str) {
            Some("crate") => path[1..].to_vec(),
            Some("super") | Some("self") => {
                let mut module = here.clone();
                let mut rest = path.as_slice();
                while let Some(first) = rest.first() {
                    match first.as_str() {
                        "super" => {
                            module.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                module.extend(rest.iter().cloned());
                module
            }
            Some(first) => {
                // A path through one of the module's own files.
                let mut module = here.clone();
                module.push(first.to_string());
                if file_defining(root, &module) == file_defining(root, &here) {
                    continue;
                }
                module.extend(path[1..].iter().cloned());
                module
            }
            None => continue,
        };
        let absolute: Vec<String> = absolute.into_iter().filter(|s| s != "*").collect();
        if let Some(target) = file_defining(root, &absolute) {
            if target != file {
                let test_only = inside.iter().any(|(_, _, _, test)| *test);
                found.push((target, path.join("::"), test_only));
            }
        }
    }
    found
}

/// A circle among `edges` (file to the files it imports), if there is
/// one: its files in order, the first again at the end.
fn circle(edges: &std::collections::BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn walk(
        file: &str,
        edges: &std::collections::BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|f| f == file) {
            let mut found = path[at..].to_vec();
            found.push(file.to_string());
            return Some(found);
        }
        if done.contains(file) {
            return None;
        }
        path.push(file.to_string());
        for next in edges.get(file).into_iter().flatten() {
            if let Some(found) = walk(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(file.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|file| walk(file, edges, &mut Vec::new(), &mut done))
}

/// Inside `src/store/`, what `every_import_points_down_the_layers` is for
/// `src/`: every file in a row of the table of its layers (its second
/// table), and every path a file names that leads to another file of
/// `src/store/` (a `use` tree, multi-line groups too, or a path in code
/// through `crate::`, `super::`, `self::` or the module's own files) ends
/// in its layer or one below it, and not in another folder of its layer
/// (one backend in the other). And the files of each folder of the
/// `backends` row, `mod.rs` among them, import one another in no circle,
/// their tests aside.
#[test]
fn every_store_import_points_down_and_no_backend_closes_a_circle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let document = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let layers = layers(&document, "| store layer |");
    assert!(
        layers.len() >= 4,
        "no table of the layers of src/store/ in docs/architecture.md: {layers:?}"
    );
    let mut sources = Vec::new();
    files(&root.join("src/store"), &mut sources);
    let sources: Vec<String> = sources
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p| {
            p.strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/")
        })
        .collect();
    let mut unplaced = BTreeSet::new();
    let mut wrong = BTreeSet::new();
    // Per backend folder, each file's imports of the folder's other files
    // outside its tests (a file's tests may use any file of the backend,
    // the schema's migrations say).
    let mut backends: std::collections::BTreeMap<
        String,
        std::collections::BTreeMap<String, BTreeSet<String>>,
    > = Default::default();
    for file in &sources {
        let Some((from, from_place)) = layer_of(&layers, file) else {
            unplaced.insert(file.clone());
            continue;
        };
        for (target, path, test_only) in imports_of(root, file) {
            if !target.starts_with("src/store/") {
                continue;
            }
            let Some((to, to_place)) = layer_of(&layers, &target) else {
                unplaced.insert(target);
                continue;
            };
            let (from_name, to_name) = (&layers[from].0, &layers[to].0);
            if to < from {
                wrong.insert(format!(
                    "{file} ({from_name}) uses {path}, in {target} ({to_name}): it points up"
                ));
            } else if to == from && to_place != from_place && from_place.ends_with('/') {
                wrong.insert(format!(
                    "{file} uses {path}, in {target}: another folder of its layer ({from_name})"
                ));
            }
            if layers[from].0 == "backends" && to_place == from_place && !test_only {
                backends
                    .entry(from_place.clone())
                    .or_default()
                    .entry(file.clone())
                    .or_default()
                    .insert(target);
            }
        }
    }
    assert!(
        backends.len() >= 2,
        "no backend folders in the table of src/store/: {backends:?}"
    );
    let mut problems: Vec<String> = unplaced
        .into_iter()
        .map(|file| format!("{file}: in no row of the table"))
        .collect();
    problems.extend(wrong);
    for (backend, edges) in &backends {
        if let Some(files) = circle(edges) {
            problems.push(format!(
                "{backend}: its files import each other in a circle: {}",
                files.join(" -> ")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "src/store/ against docs/architecture.md's table of its layers: {problems:#?}"
    );
}
