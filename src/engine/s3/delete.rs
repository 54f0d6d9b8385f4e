//! Deleting what a removal listed (never timed): DeleteObjects, up to
//! [`BATCH`] objects or versions a request, their keys in the body rather
//! than the URL and each checked by the same rule as every other key
//! ([`super::keys`]); one DELETE per object on a store that does not
//! implement it (501 `NotImplemented`), and for a key XML cannot carry.
//!
//! The answer names each key deleted or refused. Those a busy store could
//! not delete (`InternalError`, `SlowDown`) are sent again after a pause;
//! any other refusal ends the removal, naming the first key, its code and
//! how many were refused; an answer that leaves a key out is an error, not
//! a success. A version whose delete is denied is explained by what may
//! keep it whatever the key's permissions (object lock, MFA Delete), read
//! from the bucket then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use rusty_s3::actions::{ObjectIdentifier, S3Action};

use super::client::{drain, read_text, Call, Client, SIGNED_FOR};
use super::listing::child;
use super::refusal::ErrorDoc;
use super::retry::Again;
use crate::{Error, Result};

/// The most objects one DeleteObjects names (S3's own maximum).
pub const BATCH: usize = 1000;

/// One thing to delete: an object, or one version of it.
#[derive(Debug, Clone)]
pub struct Item {
    pub key: String,
    pub version: Option<String>,
    pub size: u64,
}

/// How a removal deletes: in batches, until the store says it has none.
#[derive(Debug, Default)]
pub struct Deleting {
    one_by_one: AtomicBool,
}

/// What a DeleteObjects came to.
enum Batch {
    Done,
    /// The store does not implement it: nothing was deleted.
    NotImplemented,
}

impl Deleting {
    /// Deletes `items` (at most [`BATCH`]) through `client`.
    pub fn delete(&self, client: &Client, items: &[Item]) -> Result<()> {
        let (plain, awkward): (Vec<&Item>, Vec<&Item>) = items.iter().partition(|i| xml_safe(&i.key));
        for item in awkward {
            client.delete_item(item)?;
        }
        if plain.is_empty() {
            return Ok(());
        }
        if !self.one_by_one.load(Ordering::SeqCst) {
            match client.delete_objects(&plain)? {
                Batch::Done => return Ok(()),
                Batch::NotImplemented => self.one_by_one.store(true, Ordering::SeqCst),
            }
        }
        plain.into_iter().try_for_each(|item| client.delete_item(item))
    }
}

/// Whether XML can carry `key` (no control character but tab, line feed
/// and carriage return; rusty-s3 escapes the rest).
fn xml_safe(key: &str) -> bool {
    key.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')) && !key.contains(['\u{fffe}', '\u{ffff}'])
}

/// The per-key errors of a DeleteObjects answer that a busy store gives.
fn busy_code(code: &str) -> bool {
    matches!(code, "InternalError" | "SlowDown" | "ServiceUnavailable")
}

/// A DeleteObjects answer: each key it names deleted, and each it refused
/// with its version and code.
#[derive(Debug, Default, PartialEq)]
struct Answer {
    deleted: Vec<String>,
    refused: Vec<(String, Option<String>, ErrorDoc)>,
}

impl Answer {
    fn parse(text: &str) -> std::result::Result<Answer, String> {
        let doc = roxmltree::Document::parse(text).map_err(|e| format!("the store's answer could not be read: {e}"))?;
        let mut answer = Answer::default();
        for node in doc.root_element().children().filter(roxmltree::Node::is_element) {
            let key = child(node, "Key").unwrap_or_default().to_string();
            match node.tag_name().name() {
                "Deleted" => answer.deleted.push(key),
                "Error" => {
                    let version = child(node, "VersionId").map(str::to_string);
                    let code = child(node, "Code").map(str::to_string);
                    let message = child(node, "Message").map(str::to_string);
                    answer.refused.push((key, version, ErrorDoc { code, message, region: None }));
                }
                _ => {}
            }
        }
        Ok(answer)
    }

    /// How many of `items` it names nowhere.
    fn left_out(&self, items: &[&Item]) -> usize {
        let mut named: HashMap<&str, usize> = HashMap::new();
        for key in self.deleted.iter().chain(self.refused.iter().map(|(k, ..)| k)) {
            *named.entry(key.as_str()).or_default() += 1;
        }
        items
            .iter()
            .filter(|i| match named.get_mut(i.key.as_str()) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .count()
    }
}

impl Client {
    /// One DeleteObjects of `items`, tried again while the store answers
    /// busy (the whole request, or some of its keys).
    fn delete_objects(&self, items: &[&Item]) -> Result<Batch> {
        const OP: &str = "POST (delete objects)";
        for item in items {
            self.store.check_key(OP, &item.key)?;
        }
        let mut pending: Vec<&Item> = items.to_vec();
        let mut unimplemented = false;
        self.patiently(|| {
            let what = format!("of {} objects under {}", pending.len(), self.store.scope());
            let call = Call { op: OP, key: &what };
            let ids: Vec<ObjectIdentifier> = pending
                .iter()
                .map(|i| ObjectIdentifier { key: i.key.clone(), version_id: i.version.clone() })
                .collect();
            let action = self.store.bucket.delete_objects(Some(&self.store.credentials), ids.iter());
            let url = action.sign(SIGNED_FOR);
            let (body, md5) = action.body_with_md5();
            let request = self.agent.post(url.as_str()).header("Content-MD5", &md5);
            let mut resp = match request.header("Content-Type", "application/xml").send(body.as_bytes()) {
                Ok(resp) => resp,
                Err(e) => return self.failed_to_send(call, e),
            };
            let status = resp.status().as_u16();
            if status == 501 {
                drain(&mut resp);
                unimplemented = true;
                return Ok(None);
            }
            if !resp.status().is_success() {
                return self.answer(call, &mut resp);
            }
            let text = read_text(&mut resp);
            let answer = Answer::parse(&text).map_err(|e| self.failed(call, &e))?;
            let left_out = answer.left_out(&pending);
            if left_out > 0 {
                let why =
                    format!("the store's answer named {} of the {} keys", pending.len() - left_out, pending.len());
                return Err(self.failed(call, &why));
            }
            let (busy, refused): (Vec<_>, Vec<_>) =
                answer.refused.iter().partition(|(_, _, doc)| busy_code(doc.code.as_deref().unwrap_or("")));
            if let Some((key, version, doc)) = refused.first() {
                let of_version = version.is_some() || pending.iter().any(|i| &i.key == key && i.version.is_some());
                let first = self.delete_refused(key, of_version, doc);
                return Err(match refused.len() {
                    1 => first,
                    n => Error::invalid(format!(
                        "the store refused {n} of {} deletes; the first: {first}",
                        pending.len()
                    )),
                });
            }
            let Some((key, _, doc)) = busy.first() else { return Ok(None) };
            let e = self.failed(
                Call { op: "DELETE", key },
                &format!("the store answered {} (and so for {} keys)", doc.code.as_deref().unwrap_or(""), busy.len()),
            );
            let again: Vec<&str> = busy.iter().map(|(k, ..)| k.as_str()).collect();
            pending.retain(|i| again.contains(&i.key.as_str()));
            Ok(Some(Again::Busy(e)))
        })?;
        Ok(if unimplemented { Batch::NotImplemented } else { Batch::Done })
    }

    /// The error of one key a DeleteObjects refused: as a DELETE of it
    /// answered so would read.
    fn delete_refused(&self, key: &str, version: bool, doc: &ErrorDoc) -> Error {
        let call = Call { op: if version { "DELETE (version)" } else { "DELETE" }, key };
        let status = match doc.code.as_deref() {
            Some("AccessDenied") => 403,
            Some("NoSuchBucket") => 404,
            _ => 400,
        };
        let e = self.status_error(call, status, "", doc, &Default::default());
        if version && status == 403 {
            self.with_what_keeps_versions(e)
        } else {
            e
        }
    }

    /// DELETEs an object, or one version of it by its id, tried again
    /// while the store answers busy.
    pub(super) fn delete_item(&self, item: &Item) -> Result<()> {
        let Some(version) = &item.version else { return self.delete_patiently(&item.key).map(drop) };
        let call = Call { op: "DELETE (version)", key: &item.key };
        self.store.check_key(call.op, &item.key)?;
        self.patiently(|| {
            let mut delete = self.store.bucket.delete_object(Some(&self.store.credentials), &item.key);
            delete.query_mut().insert("versionId", version.as_str());
            match self.agent.delete(delete.sign(SIGNED_FOR).as_str()).call() {
                Ok(mut resp) if resp.status() == 403 => {
                    Err(self.with_what_keeps_versions(self.check(call, &mut resp).err().unwrap_or(Error::Interrupted)))
                }
                Ok(mut resp) => self.answer(call, &mut resp),
                Err(e) => self.failed_to_send(call, e),
            }
        })
        .map(drop)
    }

    /// `denied`, a refused delete of a version, with what may keep a
    /// version whatever the key's permissions, as the bucket says: MFA
    /// Delete, or object lock (a retention period or a legal hold).
    fn with_what_keeps_versions(&self, denied: Error) -> Error {
        let bucket = self.store.bucket();
        let mfa = self.bucket_get(Call { op: "GET (versioning)", key: "" }, &[("versioning", "")]);
        let lock = self.bucket_get(Call { op: "GET (object lock)", key: "" }, &[("object-lock", "")]);
        let said = |text: &Result<Option<String>>, element: &str| {
            text.as_ref().ok().and_then(Option::as_deref).is_some_and(|t| t.contains(element))
        };
        let why = if said(&mfa, "<MfaDelete>Enabled</MfaDelete>") {
            format!(
                "; bucket {bucket} has MFA Delete on, so deleting a version needs an MFA code, which a presigned \
                 request cannot carry: delete these versions with the AWS CLI (--mfa)"
            )
        } else if said(&lock, "<ObjectLockEnabled>Enabled</ObjectLockEnabled>") {
            format!(
                "; bucket {bucket} has object lock on: a retention period or a legal hold keeps a version until it \
                 passes, whatever the key may do (the marker is kept: drop again then)"
            )
        } else {
            return denied;
        };
        match denied {
            Error::BadInput { path, why: what } => Error::BadInput { path, why: format!("{what}{why}") },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(key: &str) -> Item {
        Item { key: key.into(), version: None, size: 1 }
    }

    #[test]
    fn an_answer_names_each_key_deleted_or_refused() {
        let text = r#"<?xml version="1.0"?><DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
            <Deleted><Key>p/1</Key></Deleted><Deleted><Key>p/2</Key><VersionId>v</VersionId></Deleted>
            <Error><Key>p/3</Key><VersionId>v3</VersionId><Code>AccessDenied</Code><Message>m</Message></Error>
            </DeleteResult>"#;
        let a = Answer::parse(text).unwrap();
        assert_eq!(a.deleted, ["p/1", "p/2"]);
        assert_eq!((a.refused[0].0.as_str(), a.refused[0].1.as_deref()), ("p/3", Some("v3")));
        assert_eq!(a.refused[0].2.code.as_deref(), Some("AccessDenied"));
        let (one, two, three, four) = (item("p/1"), item("p/2"), item("p/3"), item("p/4"));
        assert_eq!(a.left_out(&[&one, &two, &three]), 0);
        assert_eq!(a.left_out(&[&one, &two, &three, &four]), 1, "p/4 was named nowhere");
        assert_eq!(a.left_out(&[&one, &one]), 1, "two versions of p/1, one answered");
        assert!(Answer::parse("not xml").is_err());
    }

    #[test]
    fn keys_xml_cannot_carry_are_deleted_one_by_one() {
        assert!(xml_safe("blobbench/t/0000000001") && xml_safe("a\tb") && xml_safe("é"));
        assert!(!xml_safe("a\u{1}b") && !xml_safe("a\u{ffff}"));
    }
}
