//! librdkafka's batch consume: a pipeline's messages taken thousands at a time.
//!
//! Polling the consumer message by message costs librdkafka a queue lock, two clock reads
//! and an event object per message, and the `rdkafka` crate an `Arc` per message besides.
//! [`MessageQueue`] is one librdkafka queue that every assigned partition's fetch queue is
//! routed to ([`MessageQueue::route`], before the partition is assigned, so that none of its
//! messages reach the consumer's own queue), and that [`MessageQueue::take`] empties with
//! `rd_kafka_consume_batch_queue`: one lock and one clock read per batch.
//!
//! Contract:
//! - The consumer's own queue keeps everything else (rebalances, statistics, errors not tied
//!   to a partition): it is still served through the `rdkafka` crate's poll.
//! - librdkafka drops from a batch the messages of an older fetch (before a seek or a new
//!   assignment) as its poll does; the pipeline's ownership check stays what decides.
//! - A partition stays routed for the consumer's life (librdkafka keeps an application's
//!   forwarding across assignments); routing again is harmless.
//! - The queue calls [`Notify::notify_one`] from librdkafka's threads when it turns
//!   non-empty, and nothing else: no lock of ours, no allocation, no panic.
//! - Taken messages are [`Messages`], destroyed when dropped. They borrow nothing from the
//!   queue, but their owner must drop them before the consumer: the pipeline's `Poll`
//!   borrows the source for that. The queue is dropped before the consumer too
//!   (`KafkaSource` drops it first).
//!
//! This folder's one unsafe code: the library forbids it everywhere else.
#![allow(unsafe_code)]

use std::ffi::{c_void, CStr, CString};
use std::ptr::NonNull;
use std::sync::Arc;

use rdkafka::bindings as rd;
use rdkafka::consumer::Consumer;
use tokio::sync::Notify;

use super::consumer::PipelineConsumer;
use crate::common::record::Headers;
use crate::error::{Error, Result};

/// The queue all of a consumer's partitions deliver their messages to.
pub(crate) struct MessageQueue {
    queue: NonNull<rd::rd_kafka_queue_t>,
    /// A handle of the consumer's own queue, for its length.
    consumer_queue: NonNull<rd::rd_kafka_queue_t>,
    rk: NonNull<rd::rd_kafka_t>,
    /// `Arc::into_raw` of the wake-up, given to librdkafka as the callback's opaque.
    wake: *const Notify,
}

// SAFETY: librdkafka's queues are thread-safe (every operation takes the queue's lock), and
// `Notify` is `Sync`.
unsafe impl Send for MessageQueue {}
// SAFETY: as above.
unsafe impl Sync for MessageQueue {}

/// Called by librdkafka (under the queue's lock) when the queue turns non-empty.
unsafe extern "C" fn queue_turned_non_empty(_rk: *mut rd::rd_kafka_t, opaque: *mut c_void) {
    // SAFETY: `opaque` is the `Notify` the queue holds a count of until the callback is
    // disabled in `Drop`, which waits for the queue's lock.
    let wake = unsafe { &*(opaque as *const Notify) };
    wake.notify_one();
}

impl MessageQueue {
    /// A new queue on `consumer`'s client that signals `wake` when it turns non-empty.
    ///
    /// # Errors
    /// [`Error::Kafka`] when librdkafka gives no queue.
    pub(crate) fn new(consumer: &PipelineConsumer, wake: Arc<Notify>) -> Result<MessageQueue> {
        let rk = NonNull::new(consumer.client().native_ptr())
            .ok_or_else(|| Error::Kafka("the consumer has no client".to_string()))?;
        // SAFETY: `rk` is the consumer's live client; the queue is destroyed in `Drop`, which
        // runs before the consumer is dropped (the contract).
        let consumer_queue = NonNull::new(unsafe { rd::rd_kafka_queue_get_consumer(rk.as_ptr()) })
            .ok_or_else(|| Error::Kafka("the consumer has no group queue".to_string()))?;
        // SAFETY: as above.
        let Some(queue) = NonNull::new(unsafe { rd::rd_kafka_queue_new(rk.as_ptr()) }) else {
            // SAFETY: the handle taken above, released once.
            unsafe { rd::rd_kafka_queue_destroy(consumer_queue.as_ptr()) };
            return Err(Error::Kafka("librdkafka gave no message queue".to_string()));
        };
        let wake = Arc::into_raw(wake);
        // SAFETY: the queue is live; the callback only reads the `Notify`, which lives until
        // `Drop` has disabled the callback.
        unsafe {
            rd::rd_kafka_queue_cb_event_enable(queue.as_ptr(), Some(queue_turned_non_empty), wake as *mut c_void)
        };
        Ok(MessageQueue { queue, consumer_queue, rk, wake })
    }

    /// Routes `topic`/`partition`'s fetched messages to this queue. Call before assigning it.
    ///
    /// # Errors
    /// [`Error::Kafka`] when librdkafka has no such partition queue.
    pub(crate) fn route(&self, topic: &str, partition: i32) -> Result<()> {
        let name = CString::new(topic).map_err(|_| Error::Kafka(format!("topic name {topic:?} holds a NUL")))?;
        // SAFETY: `rk` is live (the contract); the name is a valid C string for the call.
        let part = unsafe { rd::rd_kafka_queue_get_partition(self.rk.as_ptr(), name.as_ptr(), partition) };
        let Some(part) = NonNull::new(part) else {
            return Err(Error::Kafka(format!("no fetch queue for {topic}/{partition}")));
        };
        // SAFETY: both queues are live. Forwarding marks the partition's queue as the
        // application's, so librdkafka keeps it when the partition is (re)assigned; the
        // handle is only a reference, released at once.
        unsafe {
            rd::rd_kafka_queue_forward(part.as_ptr(), self.queue.as_ptr());
            rd::rd_kafka_queue_destroy(part.as_ptr());
        }
        Ok(())
    }

    /// Operations waiting in the consumer's own queue (events, or messages of a partition
    /// not routed here).
    pub(crate) fn consumer_queue_len(&self) -> usize {
        // SAFETY: a live queue handle.
        unsafe { rd::rd_kafka_queue_length(self.consumer_queue.as_ptr()) }
    }

    /// Takes up to `max` waiting messages without waiting, their headers parsed when
    /// `with_headers`.
    pub(crate) fn take(&self, max: usize, with_headers: bool) -> Messages {
        let mut taken: Vec<*mut rd::rd_kafka_message_t> = Vec::with_capacity(max);
        // SAFETY: the queue is live and `taken` has room for `max` pointers.
        let n = unsafe { rd::rd_kafka_consume_batch_queue(self.queue.as_ptr(), 0, taken.as_mut_ptr(), max) };
        // SAFETY: librdkafka wrote `n` (≤ `max`) message pointers; -1 (an invalid queue) is
        // taken as none.
        unsafe { taken.set_len(usize::try_from(n).unwrap_or(0).min(max)) };
        // librdkafka parses a message's headers on first request and keeps them in the
        // message: done here, while the messages are this thread's alone, so that reading
        // them later through a shared reference writes nothing.
        let headers = if with_headers {
            taken
                .iter()
                .map(|m| {
                    let mut hdrs: *mut rd::rd_kafka_headers_t = std::ptr::null_mut();
                    // SAFETY: a live message no other thread sees yet.
                    let found = unsafe { rd::rd_kafka_message_headers(*m, &mut hdrs) };
                    if found == rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
                        hdrs
                    } else {
                        std::ptr::null_mut()
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        Messages { taken, headers }
    }
}

impl Drop for MessageQueue {
    fn drop(&mut self) {
        // SAFETY: disabling the callback takes the queue's lock, under which librdkafka calls
        // it: once this returns, no call is running or will run, and the `Notify` count
        // taken in `new` can be given back. Messages still in the queue are destroyed with it.
        unsafe {
            rd::rd_kafka_queue_cb_event_enable(self.queue.as_ptr(), None, std::ptr::null_mut());
            rd::rd_kafka_queue_destroy(self.queue.as_ptr());
            rd::rd_kafka_queue_destroy(self.consumer_queue.as_ptr());
            drop(Arc::from_raw(self.wake));
        }
    }
}

/// Messages taken from a [`MessageQueue`], destroyed when dropped.
pub(crate) struct Messages {
    taken: Vec<*mut rd::rd_kafka_message_t>,
    /// Each message's parsed headers (null: none), when asked for; owned by the message.
    headers: Vec<*mut rd::rd_kafka_headers_t>,
}

// SAFETY: a taken message belongs to whoever holds it; librdkafka's destroy may run on any
// thread.
unsafe impl Send for Messages {}
// SAFETY: through `&self` messages and their headers are only read: the one thing librdkafka
// would write in a message on a read, its parsed headers, is parsed in `take`.
unsafe impl Sync for Messages {}

impl Messages {
    pub(crate) fn len(&self) -> usize {
        self.taken.len()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Message<'_>> {
        self.taken.iter().enumerate().map(|(i, m)| Message {
            // SAFETY: each pointer is a message librdkafka handed over, live until `Drop`.
            m: unsafe { &**m },
            headers: self.headers.get(i).copied().unwrap_or(std::ptr::null_mut()),
        })
    }
}

impl Drop for Messages {
    fn drop(&mut self) {
        for m in self.taken.drain(..) {
            // SAFETY: each message is destroyed once, here.
            unsafe { rd::rd_kafka_message_destroy(m) };
        }
    }
}

/// One taken message (or a consume error of a partition).
#[derive(Clone, Copy)]
pub(crate) struct Message<'a> {
    m: &'a rd::rd_kafka_message_t,
    /// Its parsed headers, owned by the message; null when none or not asked for.
    headers: *const rd::rd_kafka_headers_t,
}

/// A byte slice librdkafka owns, or `None` for its null pointer.
///
/// # Safety
/// `ptr` is null or points to `len` bytes that live as long as `'a`.
unsafe fn slice<'a>(ptr: *const c_void, len: usize) -> Option<&'a [u8]> {
    // SAFETY: the caller's promise.
    (!ptr.is_null()).then(|| unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
}

impl<'a> Message<'a> {
    pub(crate) fn partition(&self) -> i32 {
        self.m.partition
    }

    pub(crate) fn offset(&self) -> i64 {
        self.m.offset
    }

    /// The consume error this message carries instead of a record, if any (a partition's
    /// normal end is none).
    pub(crate) fn error(&self) -> Option<String> {
        use rd::rd_kafka_resp_err_t as E;
        match self.m.err {
            E::RD_KAFKA_RESP_ERR_NO_ERROR | E::RD_KAFKA_RESP_ERR__PARTITION_EOF => None,
            err => {
                // SAFETY: librdkafka returns a static or message-owned C string.
                let text = unsafe { CStr::from_ptr(rd::rd_kafka_message_errstr(self.m)) }.to_string_lossy();
                let code = rdkafka::types::RDKafkaErrorCode::from(err);
                Some(format!("partition {}: {code}: {text}", self.m.partition))
            }
        }
    }

    pub(crate) fn key(&self) -> Option<&'a [u8]> {
        // SAFETY: the key lives as long as the message.
        unsafe { slice(self.m.key, self.m.key_len) }
    }

    pub(crate) fn payload(&self) -> Option<&'a [u8]> {
        // SAFETY: the payload lives as long as the message.
        unsafe { slice(self.m.payload, self.m.len) }
    }

    /// Milliseconds since the epoch (create or log-append time), if the record has one.
    pub(crate) fn timestamp_ms(&self) -> Option<i64> {
        let mut kind = rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
        // SAFETY: a live message and a place for the kind.
        let ms = unsafe { rd::rd_kafka_message_timestamp(self.m, &mut kind) };
        (ms != -1 && kind != rd::rd_kafka_timestamp_type_t::RD_KAFKA_TIMESTAMP_NOT_AVAILABLE).then_some(ms)
    }

    /// The record's headers in order (none unless taken `with_headers`); a header whose name
    /// is not UTF-8 is left out.
    pub(crate) fn headers(&self) -> Headers<'a> {
        let mut out = Vec::new();
        if self.headers.is_null() {
            return out;
        }
        for idx in 0.. {
            let (mut name, mut value, mut size) = (std::ptr::null(), std::ptr::null(), 0usize);
            // SAFETY: the message's parsed headers, live as long as it; reading them writes
            // nothing. The out-pointers are valid.
            let err = unsafe { rd::rd_kafka_header_get_all(self.headers, idx, &mut name, &mut value, &mut size) };
            if err != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR || name.is_null() {
                break;
            }
            // SAFETY: a NUL-terminated name and `size` bytes of value, owned by the message.
            let (name, value) = unsafe { (CStr::from_ptr(name), slice(value, size)) };
            if let Ok(name) = name.to_str() {
                out.push((name, value));
            }
        }
        out
    }
}
