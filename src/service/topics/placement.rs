//! A topics ingest: where an observation goes (`auto` placement by title
//! or similar text, a new topic, an extension, a field version), and the
//! writes it makes there; the topics most like it.

use super::*;
use crate::store::{ScoredKey, SharedWords};

/// Places and stores a topics ingest: every check (placement, topic,
/// edges) comes before the first write.
pub fn ingest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    cx: &IngestContext<'_>,
    rules: &TopicRules,
    request: TopicIngest,
) -> Result<Ingested, ServiceError> {
    let settings = rules.settings;
    let now = cx.now;
    // Where a new topic would go, and that the caller may write there.
    let mut scope = request.scope.clone();
    place(caller, "", request.sensitivity, &mut scope)?;
    let text = format!(
        "{} {}",
        request.title.as_deref().unwrap_or_default(),
        request.summary.as_deref().unwrap_or_default()
    );
    crate::service::check_embedding(tx, "embedding", request.embedding.as_ref())?;
    let similar_topic_ids = if request.suggest_similar {
        similar_ids(tx, caller, &text, request.embedding.as_ref())?
    } else {
        Vec::new()
    };

    let (target, placement) = match request.placement {
        Placement::NewTopic => (None, Placement::NewTopic),
        Placement::ExtendTopic | Placement::VersionField => {
            let id = request.topic_id.as_deref().unwrap_or_default();
            let found = load_topic(tx, caller, "topic_id", id)?;
            (Some(follow_merges(tx, caller, found)?), request.placement)
        }
        Placement::Auto => {
            match find_home(tx, caller, &request, scope.as_deref(), &text, settings)? {
                Some(found) => (Some(found), Placement::ExtendTopic),
                None => (None, Placement::NewTopic),
            }
        }
    };

    let home = target.as_ref().map(|(key, _)| *key);
    let mut edges = Vec::with_capacity(request.edges.len());
    for (i, edge) in request.edges.iter().enumerate() {
        let field = format!("edges[{i}].to_topic_id");
        let (key, _) = load_topic(tx, caller, &field, &edge.to_topic_id)?;
        if home == Some(key) {
            return Err(self_edge(&field).into());
        }
        edges.push((key, edge.kind.as_str()));
    }

    let (key, mut topic, fresh) = match target {
        Some((key, topic)) => (key, topic, false),
        None => {
            let topic = Topic {
                id: (cx.new_id)(),
                title: request.title.clone().unwrap_or_default(),
                summary: request.summary.clone().unwrap_or_default(),
                kind: request.kind.clone(),
                sensitivity: request.sensitivity,
                scope,
                tags: request.tags.clone(),
                salience: rules.initial_salience,
                archived: false,
                created_at: now,
                updated_at: now,
                anchor: Anchor {
                    salience: rules.initial_salience,
                    at: now,
                },
            };
            let key = tx.insert_topic(&topic)?;
            (key, topic, true)
        }
    };

    let mut heads = current_fields(tx, key)?;
    if placement == Placement::VersionField {
        let name = &request.fields[0].name;
        if !heads.contains_key(name) {
            return Err(ValidationError::new(
                "fields[0].name",
                format!("version_field needs a field the topic has; it has no field {name:?}"),
            )
            .into());
        }
    }

    let mut applied = Vec::with_capacity(request.fields.len());
    let mut access = VersionAccess::new();
    for (i, item) in request.fields.iter().enumerate() {
        let head = heads.get(&item.name).cloned();
        // A field whose current version the caller may not see is not its
        // to change, whatever the value: comparing, reinforcing or
        // superseding that version would tell the caller about it.
        if let Some(head) = &head {
            if !access.caller_sees(tx, caller, head)? {
                return Err(ServiceError::NotFound(format!(
                    "fields[{i}].name: the topic has no field {:?} this caller may change",
                    item.name
                )));
            }
        }
        // A retracted head is no value, nor is the end of a field: the
        // field is stated afresh, its history going on.
        let live = head.as_ref().filter(|h| !h.retracted && !h.ended);
        let op = FieldOp::of(live.map(|h| &h.value), &item.value);
        let by = Attribution::new(
            caller.actor(&request.source),
            item.why_changed
                .clone()
                .unwrap_or_else(|| format!("topic field {} changed", item.name)),
        );
        let record_id = match (op, live) {
            (FieldOp::Unchanged, Some(head)) => {
                reinforce(
                    tx,
                    caller,
                    now,
                    &by,
                    &head.record_id,
                    cx.policy.max_salience,
                )?;
                head.record_id.clone()
            }
            // Created (no head) or versioned (a head with another value).
            _ => {
                let mut record = field_record(cx, &topic, item, &request.source)?;
                let record = match live {
                    Some(head) => supersede(tx, caller, now, &by, &head.record_id, record)?,
                    None => {
                        place_new(caller, &format!("fields[{}].", applied.len()), &mut record)?;
                        insert_new(tx, &mut record, now)?;
                        record
                    }
                };
                let version = FieldVersion {
                    name: item.name.clone(),
                    seq: head.as_ref().map_or(1, |head| head.seq + 1),
                    record_id: record.id.clone(),
                    valid_from: next_valid_from(head.as_ref(), now),
                    value: item.value.clone(),
                    source: request.source.clone(),
                    why_changed: item.why_changed.clone(),
                    retracted: false,
                    ended: false,
                };
                tx.add_version(key, &version)?;
                if version.seq as usize > settings.max_field_history {
                    tx.trim_versions(key, &item.name, settings.max_field_history)?;
                }
                heads.insert(item.name.clone(), version);
                record.id
            }
        };
        applied.push(Applied {
            field: item.name.clone(),
            op,
            record_id,
        });
    }

    if let Some(embedding) = &request.embedding {
        tx.put_topic_vector(key, embedding)?;
    }

    let mut edges_added = 0;
    for (to, kind) in edges {
        edges_added += usize::from(tx.add_edge(key, to, kind, now)?);
    }

    if fresh {
        tx.set_topic_words(key, &BTreeSet::new(), &index_words(&topic.text()))?;
    } else {
        if let Some(summary) = request.summary.as_ref().filter(|s| **s != topic.summary) {
            let old = index_words(&topic.text());
            topic.summary.clone_from(summary);
            tx.set_topic_words(key, &old, &index_words(&topic.text()))?;
        }
        // An observation about a topic is a use of it.
        topic.reinforce(
            rules.decay.reinforcement_gain,
            rules.max_salience,
            &rules.decay,
            now,
        );
        topic.updated_at = now;
        tx.update_topic(key, &topic)?;
    }
    index(tx, key, &topic, heads.values(), fresh)?;
    Ok(Ingested {
        topic_id: topic.id,
        placement,
        applied,
        edges_added,
        similar_topic_ids,
    })
}

/// Most topics read per word, and most topics compared, when looking for
/// topics similar to an observation.
pub(super) const PER_WORD: usize = 500;

pub(super) const MAX_CANDIDATES: usize = 100;

/// The topics not archived that the caller may see whose title and summary
/// share at least `at_least` words with `text`, with their similarity to
/// it, most similar first.
pub(super) fn similar(
    tx: &mut dyn Transaction,
    caller: &Caller,
    text: &str,
    at_least: usize,
) -> Result<Vec<(f64, i64, Topic)>, ServiceError> {
    let words = index_words(text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for SharedWords { key, .. } in tx
        .topics_sharing(&words, PER_WORD)?
        .into_iter()
        .filter(|found| found.shared >= at_least)
        .take(MAX_CANDIDATES)
    {
        let Some(topic) = tx.topic_by_key(key)? else {
            continue;
        };
        if !topic.archived && visible(caller, &topic) {
            found.push((text_similarity(text, &topic.text()), key, topic));
        }
    }
    found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(found)
}

/// The ids of up to [`MAX_SIMILAR`] topics the caller may see most like an
/// observation: by the share of title and summary words in common, and by
/// the cosine of their vectors with `embedding`, the higher of the two.
pub(super) fn similar_ids(
    tx: &mut dyn Transaction,
    caller: &Caller,
    text: &str,
    embedding: Option<&Embedding>,
) -> Result<Vec<String>, ServiceError> {
    let mut offers = Vec::new();
    for (similarity, key, topic) in similar(tx, caller, text, 1)?.into_iter().take(MAX_SIMILAR) {
        offers.push((key, similarity, topic.id));
    }
    if let Some(embedding) = embedding {
        let query = QueryVector::new(embedding);
        for ScoredKey { key, score } in
            tx.nearest_topics(&query, &caller.trust, None, MAX_SIMILAR)?
        {
            if let Some(topic) = tx.topic_by_key(key)? {
                offers.push((key, score, topic.id));
            }
        }
    }
    Ok(most_similar(offers))
}

/// The ids of the topics offered (key, score, id), each once with the
/// higher of its scores, best first (ties by key), at most
/// [`MAX_SIMILAR`].
pub(super) fn most_similar(offers: Vec<(i64, f64, String)>) -> Vec<String> {
    let mut best: BTreeMap<i64, (f64, String)> = BTreeMap::new();
    for (key, score, id) in offers {
        let entry = best.entry(key).or_insert((score, id));
        entry.0 = entry.0.max(score);
    }
    let mut ranked: Vec<(f64, i64, String)> = best
        .into_iter()
        .map(|(key, (score, id))| (score, key, id))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(_, _, id)| id)
        .collect()
}

/// Where `auto` puts an observation: a topic of the same scope the caller
/// may see, with the same title, or else the most similar text at or
/// above the threshold.
pub(super) fn find_home(
    tx: &mut dyn Transaction,
    caller: &Caller,
    request: &TopicIngest,
    scope: Option<&str>,
    text: &str,
    settings: TopicSettings,
) -> Result<Option<(i64, Topic)>, ServiceError> {
    let title = request.title.as_deref().unwrap_or_default();
    if let Some(found) = tx
        .topics_titled(title, scope)?
        .into_iter()
        .find(|found| visible(caller, &found.topic))
    {
        return Ok(Some((found.key, found.topic)));
    }
    let threshold = settings.match_threshold;
    let at_least = words_needed(threshold, index_words(text).len());
    let similar = similar(tx, caller, text, at_least)?;
    Ok(best_home(similar, threshold, scope))
}

/// How many words a topic must share with an observation of `words`
/// words to be similar at `threshold` at all: their union is at least as
/// large as the observation's words, so fewer shared words cannot reach
/// it. At least one.
pub(super) fn words_needed(threshold: f64, words: usize) -> usize {
    ((threshold * words as f64).ceil() as usize).max(1)
}

/// The home `auto` picks among `similar` (most similar first): the first
/// at or above `threshold`, of the observation's own scope.
pub(super) fn best_home(
    similar: Vec<(f64, i64, Topic)>,
    threshold: f64,
    scope: Option<&str>,
) -> Option<(i64, Topic)> {
    similar
        .into_iter()
        .find(|(similarity, _, topic)| *similarity >= threshold && topic.scope.as_deref() == scope)
        .map(|(_, key, topic)| (key, topic))
}

/// [`ingest`] as a write job.
pub struct PlaceObservation {
    pub caller: Caller,
    pub policy: Policy,
    pub now: Timestamp,
    pub rules: TopicRules,
    pub request: TopicIngest,
}

impl Job for PlaceObservation {
    type Output = Ingested;
    const NAME: &'static str = "place_observation";

    fn run(self, tx: &mut dyn Transaction) -> Result<Ingested, ServiceError> {
        let cx = IngestContext {
            policy: &self.policy,
            now: self.now,
            new_id: &crate::domain::record::new_record_id,
            key: self.caller.key.as_deref(),
        };
        ingest(tx, &self.caller, &cx, &self.rules, self.request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::record::Sensitivity;

    fn topic(id: &str, scope: Option<&str>) -> Topic {
        let at = crate::domain::time::parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        Topic {
            id: id.to_string(),
            title: id.to_string(),
            summary: String::new(),
            kind: None,
            sensitivity: Sensitivity::Low,
            scope: scope.map(str::to_string),
            tags: Vec::new(),
            salience: 1.0,
            archived: false,
            created_at: at,
            updated_at: at,
            anchor: Anchor { salience: 1.0, at },
        }
    }

    #[test]
    fn a_similar_topic_shares_enough_words_to_reach_the_threshold() {
        assert_eq!(words_needed(0.6, 5), 3);
        assert_eq!(words_needed(0.6, 4), 3, "2.4 words round up");
        assert_eq!(words_needed(1.0, 3), 3);
        assert_eq!(words_needed(0.6, 0), 1, "never less than one word");
    }

    #[test]
    fn auto_picks_the_most_similar_topic_of_its_scope_at_the_threshold() {
        let similar = vec![
            (0.9, 1, topic("other-scope", Some("b"))),
            (0.7, 2, topic("home", Some("a"))),
            (0.65, 3, topic("also", Some("a"))),
        ];
        let (key, home) = best_home(similar.clone(), 0.6, Some("a")).unwrap();
        assert_eq!((key, home.id.as_str()), (2, "home"));
        assert!(
            best_home(similar.clone(), 0.8, Some("a")).is_none(),
            "below it"
        );
        assert!(best_home(similar, 0.6, None).is_none(), "no unscoped topic");
        assert!(best_home(Vec::new(), 0.0, None).is_none());
    }

    #[test]
    fn similar_topics_count_once_with_their_better_score() {
        let offers = vec![
            (3, 0.2, "c".to_string()),
            (1, 0.5, "a".to_string()),
            (3, 0.9, "c".to_string()),
            (2, 0.5, "b".to_string()),
        ];
        assert_eq!(most_similar(offers), ["c", "a", "b"]);
        let many = (0..MAX_SIMILAR as i64 + 5)
            .map(|key| (key, 1.0 / (key + 1) as f64, key.to_string()))
            .collect();
        let ids = most_similar(many);
        assert_eq!(ids.len(), MAX_SIMILAR);
        assert_eq!(ids[0], "0");
    }
}
