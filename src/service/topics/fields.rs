//! A topic field's versions: how a new one takes effect, a field followed
//! through a revision made outside topics ingests, a field's history.

use super::*;
use crate::domain::ids::TopicId;

/// After record `old_id` was superseded through the revisions API by
/// `new`, when `old_id` was a topic field's current version: if `new`
/// still states that field (the topic's id as subject, the field's name as
/// predicate), it becomes the field's next version, so views and histories
/// follow revisions made outside topics ingests; if it states something
/// else, the field ends there (it has no value until stated again).
pub fn field_superseded(
    tx: &mut dyn Transaction,
    now: Timestamp,
    by: &Attribution,
    old_id: &str,
    new: &MemoryRecord,
) -> Result<(), ServiceError> {
    let Some(key) = tx.topic_of_record(old_id)? else {
        return Ok(());
    };
    let Some(topic) = tx.topic_by_key(key)? else {
        return Ok(());
    };
    let mut heads = current_fields(tx, key)?;
    let Some(head) = heads
        .values()
        .find(|head| head.record_id == old_id && !head.ended)
    else {
        return Ok(());
    };
    let stated = match &new.payload {
        Payload::Semantic(fact) if fact.subject == topic.id && fact.predicate == head.name => {
            Some(fact.object.clone())
        }
        _ => None,
    };
    let version = FieldVersion {
        name: head.name.clone(),
        seq: head.seq + 1,
        // An end names the record that left the field.
        record_id: if stated.is_some() {
            new.id.clone()
        } else {
            old_id.to_string()
        },
        valid_from: next_valid_from(Some(head), now),
        ended: stated.is_none(),
        value: stated.unwrap_or_else(|| head.value.clone()),
        source: by.actor.clone(),
        why_changed: Some(by.rationale.clone()),
        retracted: false,
    };
    tx.add_version(key, &version)?;
    heads.insert(version.name.clone(), version);
    index(tx, key, &topic, heads.values(), false)?;
    Ok(())
}

/// When a version made at `now` after `head` takes effect: `now`, or the
/// head's own start if that is later. `now` is read when the request is
/// taken, before the writer runs it, so another version of the field may
/// have been committed in between with a later instant; a version never
/// starts before the one it replaces, or `as_of` could never find it.
pub(super) fn next_valid_from(head: Option<&FieldVersion>, now: Timestamp) -> Timestamp {
    head.map_or(now, |head| head.valid_from.max(now))
}

/// One version in a field's history.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct VersionView {
    pub value: Value,
    #[serde(with = "crate::domain::time::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub valid_from: Timestamp,
    /// When the next version took over; `None` for the current one.
    #[serde(with = "crate::domain::time::rfc3339_option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub valid_to: Option<Timestamp>,
    pub why_changed: Option<String>,
    pub source: String,
    pub record_id: String,
}

/// The kept versions of field `name` of topic `id`, oldest first.
pub fn field_history(
    tx: &mut dyn Transaction,
    caller: &Caller,
    id: &TopicId,
    name: &str,
) -> Result<Vec<VersionView>, ServiceError> {
    let (key, _) = load_topic(tx, caller, "", id)?;
    history_of(tx, caller, key, name)
}

/// [`field_history`] of a topic already loaded (and visible) under `key`:
/// the versions the caller may see, each valid until the next of them (so
/// no hidden version shows, not even as the end of another).
pub(super) fn history_of(
    tx: &mut dyn Transaction,
    caller: &Caller,
    key: i64,
    name: &str,
) -> Result<Vec<VersionView>, ServiceError> {
    let mut access = VersionAccess::new();
    let mut versions = Vec::new();
    for version in tx.field_versions(key, name)? {
        if access.caller_sees(tx, caller, &version)? {
            versions.push(version);
        }
    }
    if versions.iter().all(|version| version.ended) {
        return Err(ServiceError::NotFound(format!(
            "the topic has no field {name:?}"
        )));
    }
    // An end shows as the end of the version before it.
    Ok(until_next(versions, |version| version.valid_from)
        .filter(|(version, _)| !version.ended)
        .map(|(version, valid_to)| VersionView {
            value: version.value,
            valid_from: version.valid_from,
            valid_to,
            why_changed: version.why_changed,
            source: version.source,
            record_id: version.record_id,
        })
        .collect())
}

/// [`field_history`] as a read job.
pub struct ReadFieldHistory {
    pub caller: Caller,
    pub id: TopicId,
    pub name: String,
}

impl Job for ReadFieldHistory {
    type Output = Vec<VersionView>;
    const NAME: &'static str = "read_field_history";

    fn run(self, tx: &mut dyn Transaction) -> Result<Vec<VersionView>, ServiceError> {
        field_history(tx, &self.caller, &self.id, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::parse_rfc3339;

    #[test]
    fn a_new_version_never_starts_before_the_one_it_replaces() {
        let at = |t: &str| parse_rfc3339(t).unwrap();
        let head = FieldVersion {
            name: "owner".into(),
            seq: 1,
            record_id: "r1".into(),
            valid_from: at("2026-03-01T10:00:00Z"),
            value: Value::from("team-a"),
            source: "agent".into(),
            why_changed: None,
            retracted: false,
            ended: false,
        };
        let later = at("2026-03-01T11:00:00Z");
        assert_eq!(next_valid_from(Some(&head), later), later);
        // Read before a version committed meanwhile took effect: after it.
        let earlier = at("2026-03-01T09:59:59Z");
        assert_eq!(next_valid_from(Some(&head), earlier), head.valid_from);
        assert_eq!(next_valid_from(None, earlier), earlier);
    }
}
