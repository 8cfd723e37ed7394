// tensord's synchronization types: absl's, made visible to ThreadSanitizer.
//
// Mutex, MutexLock and CondVar wrap the absl types of the same names one to
// one and carry the same thread-safety annotations (ABSL_GUARDED_BY(mu_) on
// a tensord::Mutex works as on an absl::Mutex under clang's
// -Wthread-safety). absl::Condition is used as is. In a normal build every
// member is an inline call of the absl member it wraps and nothing else: no
// extra state, no extra work. Notification and BlockingCounter have absl's
// interface and semantics, built on Mutex (absl's would lock an absl::Mutex
// of their own, outside any annotation).
//
// Note [TSan mutex annotations]
// Debian's Abseil is not built with -fsanitize=thread, so ThreadSanitizer
// cannot see the happens-before edges an absl::Mutex establishes (Abseil's
// own ABSL_TSAN_MUTEX_* annotations are compiled only into a TSan build of
// Abseil), and every access an absl::Mutex orders in tensord's code would be
// reported as a race. In a TSan build (-fsanitize=thread: __SANITIZE_THREAD__
// for GCC, __has_feature(thread_sanitizer) for clang) these wrappers describe
// each operation to TSan through <sanitizer/tsan_interface.h> instead:
//  - Lock/LockWhen/TryLock: __tsan_mutex_pre_lock, the absl call,
//    __tsan_mutex_post_lock (acquire). Unlock: __tsan_mutex_pre_unlock
//    (release), the absl call, __tsan_mutex_post_unlock.
//  - Await/AwaitWithTimeout/AwaitWithDeadline and CondVar::Wait*: an unlock
//    followed by a lock: pre_unlock + post_unlock + pre_lock before the absl
//    call, post_lock after it.
//  - TSan ignores memory accesses between a pre_ and its post_. That covers
//    absl evaluating an absl::Condition inside Lock/Unlock/Await, possibly on
//    another thread than the waiter's (it does so holding the mutex).
//  - CondVar::Signal/SignalAll: __tsan_mutex_pre_signal/post_signal (an
//    ignore region, as in a TSan build of Abseil).
//  - ~absl::Mutex runs in an ignore region too: with Debian's Abseil (built
//    without NDEBUG) it removes the mutex from absl's deadlock graph, whose
//    memmoves TSan intercepts while the lock ordering them is invisible.
// Thread safety: as the absl types.
#ifndef TENSORD_RUNTIME_CORE_MUTEX_H_
#define TENSORD_RUNTIME_CORE_MUTEX_H_

#include <atomic>

#include "absl/base/const_init.h"
#include "absl/base/dynamic_annotations.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#if defined(__SANITIZE_THREAD__)
#define TENSORD_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TENSORD_TSAN 1
#endif
#endif

#ifdef TENSORD_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace tensord {
namespace mutex_internal {

// The annotations of Note [TSan mutex annotations]; empty outside TSan.
#ifdef TENSORD_TSAN
inline void Create(void* mu) { __tsan_mutex_create(mu, 0); }
inline void Destroy(void* mu, unsigned flags) {
  __tsan_mutex_destroy(mu, flags);
}
inline void PreLock(void* mu, unsigned flags) {
  __tsan_mutex_pre_lock(mu, flags);
}
inline void PostLock(void* mu, unsigned flags) {
  __tsan_mutex_post_lock(mu, flags, 0);
}
inline void PreUnlock(void* mu) { __tsan_mutex_pre_unlock(mu, 0); }
inline void PostUnlock(void* mu) { __tsan_mutex_post_unlock(mu, 0); }
inline void PreSignal(void* cv) { __tsan_mutex_pre_signal(cv, 0); }
inline void PostSignal(void* cv) { __tsan_mutex_post_signal(cv, 0); }
constexpr unsigned kTryLock = __tsan_mutex_try_lock;
constexpr unsigned kTryLockFailed = __tsan_mutex_try_lock_failed;
constexpr unsigned kStatic = __tsan_mutex_linker_init;
#else
inline void Create(void*) {}
inline void Destroy(void*, unsigned) {}
inline void PreLock(void*, unsigned) {}
inline void PostLock(void*, unsigned) {}
inline void PreUnlock(void*) {}
inline void PostUnlock(void*) {}
inline void PreSignal(void*) {}
inline void PostSignal(void*) {}
constexpr unsigned kTryLock = 0;
constexpr unsigned kTryLockFailed = 0;
#endif

#ifdef TENSORD_TSAN
struct EndIgnore {
  ~EndIgnore() { ABSL_ANNOTATE_IGNORE_READS_AND_WRITES_END(); }
};
// An absl::Mutex whose destructor runs with memory accesses ignored: the
// body begins the region, ~absl::Mutex runs, then the EndIgnore base (bases
// are destroyed in reverse order) ends it.
class AbslMutex : private EndIgnore, public absl::Mutex {
 public:
  AbslMutex() = default;
  explicit constexpr AbslMutex(absl::ConstInitType)
      : absl::Mutex(absl::kConstInit) {}
  ~AbslMutex() { ABSL_ANNOTATE_IGNORE_READS_AND_WRITES_BEGIN(); }
};
#else
using AbslMutex = absl::Mutex;
#endif

}  // namespace mutex_internal

class CondVar;

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() { mutex_internal::Create(this); }
  // For mutexes with static storage duration (ABSL_CONST_INIT); TSan
  // ignores their destruction at exit.
  explicit constexpr Mutex(absl::ConstInitType) : mu_(absl::kConstInit) {
#ifdef TENSORD_TSAN
    tsan_flags_ = mutex_internal::kStatic;
#endif
  }
#ifdef TENSORD_TSAN
  ~Mutex() { mutex_internal::Destroy(this, tsan_flags_); }
#endif
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mutex_internal::PreLock(this, 0);
    mu_.Lock();
    mutex_internal::PostLock(this, 0);
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    mutex_internal::PreUnlock(this);
    mu_.Unlock();
    mutex_internal::PostUnlock(this);
  }
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    mutex_internal::PreLock(this, mutex_internal::kTryLock);
    const bool locked = mu_.TryLock();
    mutex_internal::PostLock(this,
                             mutex_internal::kTryLock |
                                 (locked ? 0 : mutex_internal::kTryLockFailed));
    return locked;
  }
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }

  // Blocks until `cond` holds; the mutex is released while waiting.
  void LockWhen(const absl::Condition& cond) ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mutex_internal::PreLock(this, 0);
    mu_.LockWhen(cond);
    mutex_internal::PostLock(this, 0);
  }
  // REQUIRES: held. Releases it until `cond` holds; returns with it held,
  // also on timeout (then the timed variants return false).
  void Await(const absl::Condition& cond) {
    ReleaseToWait();
    mu_.Await(cond);
    Reacquired();
  }
  bool AwaitWithTimeout(const absl::Condition& cond, absl::Duration timeout) {
    ReleaseToWait();
    const bool met = mu_.AwaitWithTimeout(cond, timeout);
    Reacquired();
    return met;
  }
  bool AwaitWithDeadline(const absl::Condition& cond, absl::Time deadline) {
    ReleaseToWait();
    const bool met = mu_.AwaitWithDeadline(cond, deadline);
    Reacquired();
    return met;
  }

 private:
  friend class CondVar;

  // A wait is an unlock followed by a lock (Note [TSan mutex annotations]).
  void ReleaseToWait() {
    mutex_internal::PreUnlock(this);
    mutex_internal::PostUnlock(this);
    mutex_internal::PreLock(this, 0);
  }
  void Reacquired() { mutex_internal::PostLock(this, 0); }

  mutex_internal::AbslMutex mu_;
#ifdef TENSORD_TSAN
  unsigned tsan_flags_ = 0;
#endif
};

// Holds `mu` for its scope (absl::MutexLock).
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// absl::CondVar over a tensord::Mutex. Prefer Mutex::Await.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // REQUIRES: `mu` held; returns with it held.
  void Wait(Mutex* mu) {
    mu->ReleaseToWait();
    cv_.Wait(&mu->mu_);
    mu->Reacquired();
  }
  // True on timeout (as absl::CondVar).
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
    mu->ReleaseToWait();
    const bool timed_out = cv_.WaitWithTimeout(&mu->mu_, timeout);
    mu->Reacquired();
    return timed_out;
  }
  void Signal() {
    mutex_internal::PreSignal(this);
    cv_.Signal();
    mutex_internal::PostSignal(this);
  }
  void SignalAll() {
    mutex_internal::PreSignal(this);
    cv_.SignalAll();
    mutex_internal::PostSignal(this);
  }

 private:
  absl::CondVar cv_;
};

// absl::Notification, on Mutex: what happened before Notify() happens
// before every wait that returns true. May be destroyed as soon as a wait
// returned true.
class Notification {
 public:
  Notification() = default;
  // Waits for a Notify() still inside its critical section.
  ~Notification() { MutexLock lock(&mu_); }
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  // At most once.
  void Notify() {
    MutexLock lock(&mu_);
    notified_.store(true, std::memory_order_release);
  }
  bool HasBeenNotified() const {
    return notified_.load(std::memory_order_acquire);
  }
  void WaitForNotification() const {
    if (HasBeenNotified()) return;
    mu_.LockWhen(absl::Condition(&Notified, &notified_));
    mu_.Unlock();
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    if (HasBeenNotified()) return true;
    MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&Notified, &notified_),
                                timeout);
  }

 private:
  static bool Notified(const std::atomic<bool>* notified) {
    return notified->load(std::memory_order_acquire);
  }

  mutable Mutex mu_;
  std::atomic<bool> notified_{false};
};

// absl::BlockingCounter, on Mutex: every DecrementCount() happens before
// Wait() returns. May be destroyed as soon as Wait() returned.
class BlockingCounter {
 public:
  explicit BlockingCounter(int initial_count) : count_(initial_count) {}
  BlockingCounter(const BlockingCounter&) = delete;
  BlockingCounter& operator=(const BlockingCounter&) = delete;

  // Returns true when the count reached zero. At most `initial_count` calls.
  bool DecrementCount() {
    MutexLock lock(&mu_);
    return --count_ == 0;
  }
  // Blocks until the count is zero.
  void Wait() {
    mu_.LockWhen(absl::Condition(&Zero, &count_));
    mu_.Unlock();
  }

 private:
  static bool Zero(int* count) { return *count == 0; }

  Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tensord

#endif  // TENSORD_RUNTIME_CORE_MUTEX_H_
