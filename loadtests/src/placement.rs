//! `loadtests placement`: how well `auto` topic placement tells whether an
//! observation names a topic already known. Each case of the dataset runs
//! in a scope of its own (of this run): its seed topics are made (`new_topic`), then its
//! observation is placed with `auto`, and where it went is compared with
//! where it should have: one of the seeds, or a new topic.
//!
//! The dataset is JSON lines: `{"id", "group", "seeds": [{"title",
//! "kind"?, "summary"?}], "observation": {…the same…}, "expect": "new" |
//! <index of the seed>}`.

use serde_json::{json, Value};

use crate::http::{client, post};

pub struct PlacementOptions {
    pub url: String,
    pub dataset: std::path::PathBuf,
    pub headers: Vec<(String, String)>,
}

/// Where an observation went, or should have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    New,
    Seed(usize),
}

impl Outcome {
    fn parse(value: &Value) -> Result<Outcome, String> {
        match value {
            Value::String(s) if s == "new" => Ok(Outcome::New),
            Value::Number(n) => n
                .as_u64()
                .map(|i| Outcome::Seed(i as usize))
                .ok_or_else(|| format!("expect {n} is not a seed index")),
            other => Err(format!(
                "expect {other} is neither \"new\" nor a seed index"
            )),
        }
    }

    fn describe(self) -> String {
        match self {
            Outcome::New => "a new topic".to_string(),
            Outcome::Seed(i) => format!("seed {i}"),
        }
    }
}

/// The figures over every case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub cases: usize,
    pub correct: usize,
    /// Observations attached to a seed, and of those, to the right one.
    pub attached: usize,
    pub attached_right: usize,
    /// Cases whose observation should have been attached.
    pub should_attach: usize,
    /// Attached to a seed of another kind than the observation's.
    pub wrong_kind: usize,
}

impl Tally {
    pub fn add(&mut self, expected: Outcome, got: Outcome, kinds_differ: bool) {
        self.cases += 1;
        self.correct += usize::from(expected == got);
        if matches!(expected, Outcome::Seed(_)) {
            self.should_attach += 1;
        }
        if matches!(got, Outcome::Seed(_)) {
            self.attached += 1;
            self.attached_right += usize::from(expected == got);
            self.wrong_kind += usize::from(kinds_differ);
        }
    }

    pub fn accuracy(&self) -> f64 {
        ratio(self.correct, self.cases)
    }

    /// Of the attaches made, the share that were right.
    pub fn precision(&self) -> f64 {
        ratio(self.attached_right, self.attached)
    }

    /// Of the attaches due, the share made right.
    pub fn recall(&self) -> f64 {
        ratio(self.attached_right, self.should_attach)
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        1.0
    } else {
        part as f64 / whole as f64
    }
}

/// Runs every case; answers the tally and a line per wrong case.
pub async fn run(options: PlacementOptions) -> Result<(Tally, Vec<String>), String> {
    let text = std::fs::read_to_string(&options.dataset)
        .map_err(|e| format!("{}: {e}", options.dataset.display()))?;
    let http = client(&options.headers);
    let url = format!("{}/v1/topics/ingest", options.url);
    // Cases of another run against the same service stay out of this one's.
    let run = uuid::Uuid::new_v4().simple().to_string();
    let mut tally = Tally::default();
    let mut wrong = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let case: Value = serde_json::from_str(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        let name = case["id"].as_str().unwrap_or("?").to_string();
        let scope = format!("placement-{}-{}", &run[..8], n + 1);
        let expected = Outcome::parse(&case["expect"]).map_err(|e| format!("{name}: {e}"))?;
        let mut seeds = Vec::new();
        for seed in case["seeds"].as_array().into_iter().flatten() {
            let answer = place(&http, &url, seed, "new_topic", &scope).await?;
            seeds.push(answer["topic_id"].as_str().unwrap_or_default().to_string());
        }
        let observation = &case["observation"];
        let answer = place(&http, &url, observation, "auto", &scope).await?;
        let topic = answer["topic_id"].as_str().unwrap_or_default();
        let got = seeds
            .iter()
            .position(|id| id == topic)
            .map_or(Outcome::New, Outcome::Seed);
        let kinds_differ = match got {
            Outcome::Seed(i) => {
                let kind = &case["seeds"][i]["kind"];
                let wanted = &observation["kind"];
                !kind.is_null() && !wanted.is_null() && kind != wanted
            }
            Outcome::New => false,
        };
        tally.add(expected, got, kinds_differ);
        if expected != got {
            wrong.push(format!(
                "{name}: {} went to {}, expected {} ({})",
                observation["title"],
                got.describe(),
                expected.describe(),
                answer.get("matched").unwrap_or(&Value::Null)
            ));
        }
    }
    Ok((tally, wrong))
}

async fn place(
    http: &awc::Client,
    url: &str,
    topic: &Value,
    placement: &str,
    scope: &str,
) -> Result<Value, String> {
    let mut body = json!({
        "placement": placement, "scope": scope, "source": "placement-eval",
        "trust": {"max_sensitivity": "hyper", "scopes": [scope]},
    });
    for key in ["title", "kind", "summary"] {
        if let Some(value) = topic.get(key) {
            body[key] = value.clone();
        }
    }
    let (status, answer) = post(http, url, &body).await?;
    if status != 201 {
        return Err(format!("{body}: {status} {answer}"));
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_counts_attaches_made_and_recall_attaches_due() {
        let mut tally = Tally::default();
        tally.add(Outcome::Seed(0), Outcome::Seed(0), false);
        tally.add(Outcome::Seed(0), Outcome::New, false);
        tally.add(Outcome::New, Outcome::Seed(1), true);
        tally.add(Outcome::New, Outcome::New, false);
        assert_eq!(tally.accuracy(), 0.5);
        assert_eq!(tally.precision(), 0.5);
        assert_eq!(tally.recall(), 0.5);
        assert_eq!(tally.wrong_kind, 1);
        assert_eq!(Tally::default().accuracy(), 1.0, "nothing to get wrong");
    }
}
