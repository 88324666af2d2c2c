//! A topics ingest: where an observation goes (`auto` placement by title
//! or similar text, a new topic, an extension, a field version), and the
//! writes it makes there; the topics most like it.

use super::*;
use crate::domain::ids::RecordId;
use crate::domain::resolution::{lookup_words, rarity, similarity, Name};
use crate::domain::topic::OnAmbiguous;
use crate::store::{KeyedTopic, ScoredKey, SharedWords, SummaryVersion, WordReach};

/// Places and stores a topics ingest: every check (placement, topic,
/// edges) comes before the first write.
pub fn ingest(
    tx: &mut dyn Transaction,
    caller: &Caller,
    cx: &NewRecordContext<'_>,
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
    let mut similar_topic_ids = if request.suggest_similar {
        similar_ids(tx, caller, &text, request.embedding.as_ref())?
    } else {
        Vec::new()
    };

    let mut matched = None;
    let (target, placement) = match request.placement {
        Placement::NewTopic => (None, Placement::NewTopic),
        Placement::ExtendTopic | Placement::VersionField => {
            let id = request.topic_id.as_deref().unwrap_or_default();
            let found = load_topic(tx, caller, "topic_id", id)?;
            (Some(follow_merges(tx, caller, found)?), request.placement)
        }
        Placement::Auto => match find_home(tx, caller, &request, scope.as_deref(), settings)? {
            Resolved::Home(key, topic, how) => {
                if how.by == MatchedBy::Similar {
                    tx.add_alias(key, request.title.as_deref().unwrap_or_default(), now)?;
                }
                matched = Some(how);
                (Some((key, *topic)), Placement::ExtendTopic)
            }
            Resolved::New { near } => {
                if !near.is_empty() && request.on_ambiguous == OnAmbiguous::Fail {
                    return Err(ServiceError::Ambiguous {
                        message: format!(
                            "title: {} topics could be the one this names; name one with \
                             extend_topic, or place it with on_ambiguous new_topic",
                            near.len()
                        ),
                        similar_topic_ids: near,
                    });
                }
                similar_topic_ids.retain(|id| !near.contains(id));
                similar_topic_ids.splice(0..0, near);
                similar_topic_ids.truncate(MAX_SIMILAR);
                (None, Placement::NewTopic)
            }
        },
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
        // The topic's state, not the request, decides: 409.
        if !heads.contains_key(name) {
            return Err(ServiceError::FailedPrecondition(format!(
                "fields[0].name: version_field needs a field the topic has; it has no field {name:?}"
            )));
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
                    &RecordId::stored(head.record_id.clone()),
                    cx.policy.max_salience,
                )?;
                head.record_id.clone()
            }
            // Created (no head) or versioned (a head with another value).
            _ => {
                let mut record = field_record(cx, &topic, item, &request.source)?;
                let record = match live {
                    Some(head) => {
                        let old = RecordId::stored(head.record_id.clone());
                        supersede(tx, caller, now, &by, &old, record)?
                    }
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
        tx.set_topic_words(key, &topic, &BTreeSet::new(), &index_words(&topic.text()))?;
        if !topic.summary.is_empty() {
            let first = SummaryVersion {
                seq: 1,
                summary: topic.summary.clone(),
                valid_from: now,
                source: request.source.clone(),
                why_changed: request.why_changed.clone(),
            };
            tx.add_summary(key, &first)?;
        }
    } else {
        if let Some(summary) = request.summary.as_ref().filter(|s| **s != topic.summary) {
            let old = index_words(&topic.text());
            let last = tx.summaries(key)?.pop();
            let next = SummaryVersion {
                seq: last.as_ref().map_or(1, |last| last.seq + 1),
                summary: summary.clone(),
                valid_from: last.map_or(now, |last| last.valid_from.max(now)),
                source: request.source.clone(),
                why_changed: Some(
                    request
                        .why_changed
                        .clone()
                        .unwrap_or_else(|| format!("summary restated by {}", request.source)),
                ),
            };
            tx.add_summary(key, &next)?;
            topic.summary.clone_from(summary);
            tx.set_topic_words(key, &topic, &old, &index_words(&topic.text()))?;
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
        matched,
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
        .topics_sharing(&words, &WordReach::of(&caller.trust, None), PER_WORD)?
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

/// How `auto` knew the topic an observation names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MatchedBy {
    /// The same title (case, spacing, punctuation and a leading article
    /// aside).
    Title,
    /// A title an earlier observation named the topic by.
    Alias,
    /// Titles alike enough (`domain::resolution`).
    Similar,
}

/// Why `auto` extended the topic it did.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Matched {
    pub topic_id: String,
    pub by: MatchedBy,
    /// How alike the titles are, in [0, 1]; 1 for a title or alias.
    pub score: f64,
}

/// Where `auto` puts an observation.
pub(super) enum Resolved {
    /// The topic it names.
    Home(i64, Box<Topic>, Matched),
    /// None it clearly names: a new topic. `near` are the ids of the
    /// topics it nearly named, best first; when there are any, the choice
    /// was ambiguous.
    New { near: Vec<String> },
}

/// How far below the best a second topic may score and still make the
/// choice ambiguous.
pub(super) const AMBIGUITY_MARGIN: f64 = 0.05;

/// How far below the threshold a topic's score makes it a near one.
pub(super) const NEAR_BAND: f64 = 0.3;

/// Where `auto` puts an observation: among the topics of its scope the
/// caller may see, of its kind when both have one, the one with its title
/// (several with different kinds are ambiguous); else the one with it as
/// an alias; else the one whose title is most alike at or above the
/// threshold, unless another is nearly as alike; else a new topic.
pub(super) fn find_home(
    tx: &mut dyn Transaction,
    caller: &Caller,
    request: &TopicIngest,
    scope: Option<&str>,
    settings: TopicSettings,
) -> Result<Resolved, ServiceError> {
    let title = request.title.as_deref().unwrap_or_default();
    let fits = |topic: &Topic| {
        visible(caller, topic)
            && match (&request.kind, &topic.kind) {
                (Some(wanted), Some(kind)) => wanted == kind,
                _ => true,
            }
    };
    for (by, found) in [
        (MatchedBy::Title, tx.topics_titled(title, scope)?),
        (MatchedBy::Alias, tx.topics_aliased(title, scope)?),
    ] {
        let found: Vec<KeyedTopic> = found.into_iter().filter(|f| fits(&f.topic)).collect();
        let Some(first) = found.first() else {
            continue;
        };
        // Same-titled topics of one kind are duplicates the background
        // merge joins into the oldest; of different kinds, different
        // things.
        if found.iter().any(|f| f.topic.kind != first.topic.kind) {
            let near = found.into_iter().map(|f| f.topic.id).collect();
            return Ok(Resolved::New { near });
        }
        let matched = Matched {
            topic_id: first.topic.id.clone(),
            by,
            score: 1.0,
        };
        return Ok(Resolved::Home(
            first.key,
            Box::new(first.topic.clone()),
            matched,
        ));
    }
    let name = Name::parse(title);
    let mut candidates = Vec::new();
    for SharedWords { key, .. } in tx
        .topics_sharing(
            &lookup_words(title),
            &WordReach::of(&caller.trust, Some(scope)),
            PER_WORD,
        )?
        .into_iter()
        .take(MAX_CANDIDATES)
    {
        if let Some(topic) = tx.topic_by_key(key)? {
            if !topic.archived && topic.scope.as_deref() == scope && fits(&topic) {
                candidates.push((key, Name::parse(&topic.title), topic));
            }
        }
    }
    // How common a word is among the topics compared, the observation
    // left out: a word it shares with one topic is not made to look
    // common by its own use.
    let names: Vec<&Name> = candidates.iter().map(|(_, n, _)| n).collect();
    let weights = rarity(&names);
    let scored: Vec<(f64, i64, Topic)> = candidates
        .into_iter()
        .map(|(key, theirs, topic)| (similarity(&name, &theirs, &weights), key, topic))
        .collect();
    Ok(choose(scored, settings.match_threshold))
}

/// The choice among `scored` topics (score, key, topic): the best at or
/// above `threshold` unless another is within [`AMBIGUITY_MARGIN`] of it;
/// else a new topic, with those within [`NEAR_BAND`] below the threshold
/// (and the rivals) as near ones.
pub(super) fn choose(mut scored: Vec<(f64, i64, Topic)>, threshold: f64) -> Resolved {
    scored.retain(|(score, _, _)| *score > 0.0 && *score >= threshold - NEAR_BAND);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if let [(best, key, topic), rest @ ..] = scored.as_slice() {
        let rivals = rest
            .first()
            .is_some_and(|(second, _, _)| *second >= best - AMBIGUITY_MARGIN);
        if *best >= threshold && !rivals {
            let matched = Matched {
                topic_id: topic.id.clone(),
                by: MatchedBy::Similar,
                score: (best * 1000.0).round() / 1000.0,
            };
            return Resolved::Home(*key, Box::new(topic.clone()), matched);
        }
    }
    let near = scored
        .into_iter()
        .take(MAX_SIMILAR)
        .map(|(_, _, topic)| topic.id)
        .collect();
    Resolved::New { near }
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
        let cx = NewRecordContext {
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

    fn topic(id: &str, scope: Option<&str>) -> Topic {
        let at = crate::domain::time::parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        Topic::sample(id, scope, at)
    }

    fn scored(scores: &[(f64, &str)]) -> Vec<(f64, i64, Topic)> {
        scores
            .iter()
            .enumerate()
            .map(|(key, (score, id))| (*score, key as i64, topic(id, None)))
            .collect()
    }

    fn home(resolved: Resolved) -> Option<(String, f64)> {
        match resolved {
            Resolved::Home(_, topic, matched) => {
                assert_eq!(topic.id, matched.topic_id);
                Some((matched.topic_id, matched.score))
            }
            Resolved::New { .. } => None,
        }
    }

    fn near(resolved: Resolved) -> Vec<String> {
        match resolved {
            Resolved::New { near } => near,
            Resolved::Home(..) => panic!("a home was chosen"),
        }
    }

    #[test]
    fn the_best_topic_at_the_threshold_is_chosen_when_no_other_is_as_good() {
        let chosen = choose(scored(&[(0.9, "a"), (0.6, "b")]), 0.8);
        assert_eq!(home(chosen), Some(("a".to_string(), 0.9)));
        assert_eq!(home(choose(scored(&[(1.0, "a")]), 0.8)).unwrap().0, "a");
    }

    #[test]
    fn two_nearly_as_good_are_not_guessed_between() {
        let near = near(choose(scored(&[(0.9, "a"), (0.87, "b"), (0.2, "c")]), 0.8));
        assert_eq!(near, ["a", "b"], "the far one is left out");
    }

    #[test]
    fn a_best_just_short_of_the_threshold_makes_a_new_topic_with_it_as_near() {
        assert_eq!(near(choose(scored(&[(0.6, "a")]), 0.8)), ["a"]);
        assert!(near(choose(scored(&[(0.4, "a"), (0.0, "b")]), 0.8)).is_empty());
        assert!(near(choose(Vec::new(), 0.8)).is_empty());
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
