//! Generated dialogue and notes about a software team's work (names,
//! numbers, services, places, common words; one to three sentences of
//! varied length), and the questions an agent would ask of it: the text
//! of `loadtests tenants`, and the other talk `loadtests conversations
//! --distractors` puts beside the conversations of its set.

/// xorshift64*: small, fast and reproducible; statistical quality is
/// ample for picking request shapes.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Zero is a fixed point of xorshift.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

const NAMES: &[&str] = &[
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ivan", "Jia", "Kofi",
    "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq", "Uma", "Viktor",
    "Wen", "Ximena", "Yusuf", "Zoe",
];
pub const THINGS: &[&str] = &[
    "billing service",
    "auth module",
    "payment gateway",
    "deploy pipeline",
    "search index",
    "nightly backup",
    "user dashboard",
    "mobile app",
    "invoice export",
    "rate limiter",
    "message queue",
    "cache layer",
    "login page",
    "data warehouse",
    "api gateway",
    "email sender",
    "report builder",
    "feature flag",
    "load balancer",
    "cron scheduler",
    "image resizer",
    "audit log",
    "session store",
    "checkout flow",
    "analytics job",
    "notification service",
    "recommendation model",
    "onboarding wizard",
    "config loader",
    "database migration",
];
const PLACES: &[&str] = &[
    "staging",
    "production",
    "the eu cluster",
    "us-east",
    "the test farm",
    "the laptop",
    "the canary",
    "kubernetes",
    "the old servers",
    "ci",
];
pub const TAGS: &[&str] = &[
    "ops", "dev", "prod", "auth", "build", "infra", "ui", "db", "perf", "docs", "billing",
    "security",
];
const TEMPLATES: &[&str] = &[
    "{name} asked whether the {thing} was deployed to {place} before the {num} o'clock release",
    "Can you check why the {thing} keeps failing on {place}? It started around {num}:{num2}",
    "{name} thinks the {thing} needs {num} more replicas before Friday",
    "The {thing} on {place} returned {num} errors in the last hour, mostly timeouts",
    "We rolled back the {thing} after {name} saw the latency go up to {num} ms",
    "{name} is running the {thing} migration tonight and will report back",
    "Remind me to ask {name} about the {thing} policies for {place}",
    "The deployment of the {thing} finished in {num} minutes without problems",
    "{name} said the {thing} is fine, it was the {thing2} that broke",
    "Please write down that the {thing} uses {num} workers on {place}",
    "I could not reproduce the bug in the {thing}; {name} saw it twice on {place}",
    "Ticket {num}: the {thing} drops requests when the {thing2} is slow",
    "{name} and {name2} agreed to move the {thing} to {place} next sprint",
    "The {thing} costs about {num} dollars a month now, up from {num2}",
    "Who owns the {thing}? {name} used to, but maybe {name2} took it over",
];
const FILLERS: &[&str] = &[
    "honestly",
    "as usual",
    "again",
    "for now",
    "I think",
    "by the way",
    "apparently",
    "if that helps",
    "just so you know",
    "to be safe",
];
const QUESTIONS: &[&str] = &[
    "why does the {thing} keep failing on {place}",
    "who deployed the {thing}",
    "what did {name} say about the {thing}",
    "how many replicas does the {thing} need",
    "when was the {thing} rolled back",
    "which errors did the {thing} return",
    "who owns the {thing} now",
    "how much does the {thing} cost",
    "is the {thing} migration running tonight",
    "what policies apply to the {thing} in {place}",
];

/// `template` with its slots filled from `rng`.
fn fill(template: &str, rng: &mut Rng) -> String {
    let mut text = template.to_string();
    let slots: [(&str, &[&str]); 5] = [
        ("{name2}", NAMES),
        ("{name}", NAMES),
        ("{thing2}", THINGS),
        ("{thing}", THINGS),
        ("{place}", PLACES),
    ];
    for (slot, choices) in slots {
        while let Some(at) = text.find(slot) {
            let choice = rng.pick(choices);
            text.replace_range(at..at + slot.len(), choice);
        }
    }
    for slot in ["{num2}", "{num}"] {
        while let Some(at) = text.find(slot) {
            text.replace_range(at..at + slot.len(), &(1 + rng.below(500)).to_string());
        }
    }
    text
}

/// One to three sentences of dialogue, some with a filler word.
pub fn utterance(rng: &mut Rng) -> String {
    let sentences = 1 + rng.below(3);
    (0..sentences)
        .map(|_| {
            let template = rng.pick(TEMPLATES);
            let mut sentence = fill(template, rng);
            if rng.below(3) == 0 {
                sentence = format!("{}, {sentence}", rng.pick(FILLERS));
            }
            sentence + "."
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A question an agent of a tenant would ask.
pub fn question(rng: &mut Rng) -> String {
    let template = rng.pick(QUESTIONS);
    fill(template, rng) + "?"
}
