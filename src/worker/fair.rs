//! The pool's workers handed out fairly: when every worker is busy, the
//! next one freed goes to the waiting message whose sender holds the
//! fewest workers (the earliest among equals), so that one sender's
//! slow mail (a flood of files built to be slow to read) waits behind its
//! own and never ahead of everybody else's. With a worker free, a message
//! takes it at once, whoever sent it: the order only matters while some
//! wait.
//!
//! A reading done later ([`Slots::acquire_later`]: a picture the OCR
//! workers had no time for while a flood waited) takes a slot only when no
//! message of now waits; one that comes while it reads waits for it (its
//! reading is bounded: `milter::later::MAX_READING`).
//!
//! A sender is what the caller names: the milter names what the client
//! cannot choose, its SMTP client's network (`milter::fair_key`: an IPv4
//! /24, an IPv6 /64, or local submission), never the envelope sender,
//! which a flood rotates.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// Most senders remembered while they hold workers (a key per worker at
/// most) and most messages waiting at once (beyond it a message waits
/// outside the line, for any worker, as before).
const MAX_WAITING: usize = 100_000;

#[derive(Debug, Default)]
struct State {
    free: usize,
    /// Workers each sender holds.
    holding: HashMap<String, usize>,
    /// Messages waiting, in order: their sender, whether it is a reading
    /// done later ([`Slots::acquire_later`]), and where to send a slot.
    waiting: VecDeque<(String, bool, oneshot::Sender<Slot>)>,
}

/// The workers' slots (module documentation). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Slots {
    state: Arc<Mutex<State>>,
}

/// One worker's slot, held by one sender; given back on drop.
#[derive(Debug)]
pub struct Slot {
    sender: String,
    state: Arc<Mutex<State>>,
    /// False once handed to a waiter that was gone (given back already).
    live: bool,
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Slots {
    /// `n` slots, all free.
    pub fn new(n: usize) -> Slots {
        Slots {
            state: Arc::new(Mutex::new(State {
                free: n,
                ..State::default()
            })),
        }
    }

    /// A slot for `sender`: at once when one is free and nobody waits,
    /// else when [`Slot`]'s drop hands it over (module documentation).
    /// Cancel-safe: a wait given up (a timeout) leaves the line, and a slot
    /// handed to it meanwhile goes on to the next.
    pub async fn acquire(&self, sender: &str) -> Slot {
        self.acquire_as(sender, false).await
    }

    /// A slot for a reading done later: at once when one is free and
    /// nobody waits, else after every message of now that waits (module
    /// documentation). Cancel-safe as [`Slots::acquire`].
    pub async fn acquire_later(&self, sender: &str) -> Slot {
        self.acquire_as(sender, true).await
    }

    async fn acquire_as(&self, sender: &str, later: bool) -> Slot {
        let rx = {
            let mut st = lock(&self.state);
            if st.free > 0 && st.waiting.is_empty() {
                st.free -= 1;
                *st.holding.entry(sender.to_owned()).or_default() += 1;
                return Slot {
                    sender: sender.to_owned(),
                    state: Arc::clone(&self.state),
                    live: true,
                };
            }
            let (tx, rx) = oneshot::channel();
            if st.waiting.len() < MAX_WAITING {
                st.waiting.push_back((sender.to_owned(), later, tx));
            } else {
                // (Past the line's bound: the oldest waiter's channel is
                // reused by nobody; this one waits as the last.)
                st.waiting.pop_front();
                st.waiting.push_back((sender.to_owned(), later, tx));
            }
            rx
        };
        match rx.await {
            Ok(slot) => slot,
            // The line dropped this waiter (past its bound): wait again.
            Err(_) => Box::pin(self.acquire_as(sender, later)).await,
        }
    }

    /// Slots free now (metrics, tests).
    pub fn free(&self) -> usize {
        lock(&self.state).free
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        let mut st = lock(&self.state);
        if let Some(n) = st.holding.get_mut(&self.sender) {
            *n -= 1;
            if *n == 0 {
                st.holding.remove(&self.sender);
            }
        }
        // A message of now before a reading done later; then the waiter
        // whose sender holds the fewest, the earliest among equals; a
        // waiter that gave up is passed over.
        loop {
            let best = st
                .waiting
                .iter()
                .enumerate()
                .min_by_key(|(i, (s, later, _))| {
                    (*later, st.holding.get(s).copied().unwrap_or(0), *i)
                })
                .map(|(i, _)| i);
            let Some((sender, _, tx)) = best.and_then(|i| st.waiting.remove(i)) else {
                st.free += 1;
                return;
            };
            if tx.is_closed() {
                continue;
            }
            *st.holding.entry(sender.clone()).or_default() += 1;
            let slot = Slot {
                sender,
                state: Arc::clone(&self.state),
                live: true,
            };
            match tx.send(slot) {
                Ok(()) => return,
                Err(mut back) => {
                    // Gone between the check and the send: undo, next.
                    back.live = false;
                    if let Some(n) = st.holding.get_mut(&back.sender) {
                        *n -= 1;
                        if *n == 0 {
                            st.holding.remove(&back.sender);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Two slots, both held by a flooder: its next message and another
    /// sender's wait; the slot freed goes to the other sender first,
    /// though it came later.
    #[tokio::test]
    async fn a_freed_slot_goes_to_the_sender_holding_fewest() {
        let slots = Slots::new(2);
        let a1 = slots.acquire("flood.example").await;
        let a2 = slots.acquire("flood.example").await;
        assert_eq!(slots.free(), 0);
        let s = slots.clone();
        let flood = tokio::spawn(async move { s.acquire("flood.example").await });
        tokio::task::yield_now().await;
        let s = slots.clone();
        let other = tokio::spawn(async move { s.acquire("people.example").await });
        while lock(&slots.state).waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        drop(a1);
        let got = other.await.unwrap();
        assert_eq!(got.sender, "people.example");
        assert!(!flood.is_finished());
        drop(a2);
        let f = flood.await.unwrap();
        assert_eq!(f.sender, "flood.example");
        drop((got, f));
        assert_eq!(slots.free(), 2);
        assert!(lock(&slots.state).holding.is_empty());
    }

    /// A reading done later waits behind every message of now, even one
    /// from a sender holding more, and takes a free slot when none waits.
    #[tokio::test]
    async fn a_later_reading_waits_behind_the_messages_of_now() {
        let slots = Slots::new(1);
        let held = slots.acquire("flood.example").await;
        let s = slots.clone();
        let later = tokio::spawn(async move { s.acquire_later("people.example").await });
        while lock(&slots.state).waiting.is_empty() {
            tokio::task::yield_now().await;
        }
        let s = slots.clone();
        let now = tokio::spawn(async move { s.acquire("flood.example").await });
        while lock(&slots.state).waiting.len() < 2 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let got = now.await.unwrap();
        assert_eq!(got.sender, "flood.example");
        assert!(!later.is_finished());
        drop(got);
        assert_eq!(later.await.unwrap().sender, "people.example");
        assert_eq!(slots.free(), 1);
    }

    /// A wait given up (a timeout) leaves no slot lost: the slot it would
    /// have got goes to the next waiter, or back to the free ones.
    #[tokio::test]
    async fn a_wait_given_up_loses_no_slot() {
        let slots = Slots::new(1);
        let held = slots.acquire("a").await;
        let gave_up = tokio::time::timeout(Duration::from_millis(1), slots.acquire("b")).await;
        assert!(gave_up.is_err());
        drop(held);
        assert_eq!(slots.free(), 1);
        let again = slots.acquire("c").await;
        drop(again);
        assert_eq!(slots.free(), 1);
    }
}
