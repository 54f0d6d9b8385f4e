//! One client's timed calls, each one HTTP request on the session's own
//! keep-alive connection:
//!
//! - **read**: one GET of the blob's object, its whole body copied into
//!   the session's reused buffer (a 404 is a miss, as kvtest counts one);
//! - **overwrite** (same size): one PUT of as many bytes as the blob has,
//!   its size known from the listing made before the runs (an application
//!   knows what it stores), so no HEAD first;
//!   A blob at or above the multipart threshold is PUT by a multipart
//!   upload instead (see [`super::multipart`]), in overwrites and puts;
//! - **put**: one PUT; **delete**: one DELETE (S3 answers the same whether
//!   or not the object was there; the listing's sizes say whether it was);
//! - **commit**: nothing: a PUT that returned is stored (Swift's object
//!   servers fsync the object before they answer);
//! - **round_trip**: one GET of the dataset's marker object (a few hundred
//!   bytes, into the same reused buffer): the protocol, authentication,
//!   proxy and one object server under each request, with next to no
//!   payload. (A request for a missing key is no floor: Swift then asks
//!   every replica and its handoffs before it answers 404.)

use std::sync::Arc;

use super::client::Client;
use super::reach::Reach;
use crate::engine::api::{check_write, take, OpenMode, Session, SessionInfo};
use crate::engine::keep::Lease;
use crate::engine::sizes::KnownSizes;
use crate::{Error, Result};

pub(super) struct S3Session {
    client: Client,
    /// Where the client (its keep-alive connection) came from and goes
    /// back to: a long-running application keeps its connections open.
    lease: Lease<Client>,
    reach: Arc<Reach>,
    sizes: Arc<KnownSizes<u64>>,
    /// Blobs of this size or more are PUT in parts.
    multipart_threshold: u64,
    write: bool,
    /// Reads ask for the newest replica ([`OpenMode::newest`]).
    newest: bool,
    /// The object key of the current request (reused).
    name: String,
    probe: String,
    buf: Vec<u8>,
}

impl S3Session {
    /// Opens the session on `client` with one GET of the marker, so the
    /// loop's first request does not pay the TCP connect.
    pub fn open(
        (client, lease): (Client, Lease<Client>),
        reach: Arc<Reach>,
        sizes: Arc<KnownSizes<u64>>,
        multipart_threshold: u64,
        mode: OpenMode,
    ) -> Result<S3Session> {
        let probe = reach.desc.marker();
        let (write, newest, name, buf) = (mode.write, mode.newest, String::new(), Vec::new());
        let mut s = S3Session { client, lease, reach, sizes, multipart_threshold, write, newest, name, probe, buf };
        s.round_trip()?;
        Ok(s)
    }
}

impl Session for S3Session {
    #[inline]
    fn read(&mut self, key: u32) -> Result<u64> {
        self.reach.desc.key_into(key, &mut self.name);
        Ok(self.client.get_into(&self.name, self.newest, &mut self.buf)?.unwrap_or(0) as u64)
    }

    fn overwrite(&mut self, key: u32, content: &[u8]) -> Result<u64> {
        check_write(self.write)?;
        let Some(len) = self.sizes.get(key) else { return Ok(0) };
        let len = usize::try_from(len).map_err(|_| Error::invalid(format!("blob {key} is too large to hold")))?;
        let value = take(content, len, key)?;
        self.reach.desc.key_into(key, &mut self.name);
        self.client.put_sized(&self.name, value, self.multipart_threshold)?;
        Ok(len as u64)
    }

    fn put(&mut self, key: u32, content: &[u8]) -> Result<()> {
        check_write(self.write)?;
        self.reach.desc.key_into(key, &mut self.name);
        self.client.put_sized(&self.name, content, self.multipart_threshold)?;
        self.sizes.insert(key, content.len() as u64);
        Ok(())
    }

    fn delete(&mut self, key: u32) -> Result<bool> {
        check_write(self.write)?;
        self.reach.desc.key_into(key, &mut self.name);
        self.client.delete(&self.name)?;
        Ok(self.sizes.remove(key))
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }

    /// Gives the client back when the session kept it; else drops it,
    /// closing its connection.
    fn close(self: Box<Self>) -> Result<()> {
        let S3Session { client, lease, .. } = *self;
        drop(lease.end(client, true));
        Ok(())
    }

    fn info(&self) -> SessionInfo {
        SessionInfo { opened_handle: self.lease.opened, ..SessionInfo::default() }
    }

    fn last_read(&self) -> Option<&[u8]> {
        Some(&self.buf)
    }

    #[inline]
    fn round_trip(&mut self) -> Result<Option<u64>> {
        match self.client.get_into(&self.probe, false, &mut self.buf)? {
            Some(n) => Ok(Some(n as u64)),
            None => Err(Error::bad_input(
                &self.client.store().label,
                format!("{} is missing: not a blobbench dataset's prefix", self.probe),
            )),
        }
    }
}
