// The acl C API of host work in stream order: aclrtStreamQuery, aclrtLaunchHostFunc, and the
// callback family (aclrtSubscribeReport, aclrtLaunchCallback, aclrtProcessReport,
// aclrtUnSubscribeReport), with CANN's codes.
//
// A callback is not run by the stream: the stream hands it to the thread subscribed to it, which
// runs it inside aclrtProcessReport (CANN's design: the program's own thread runs its callbacks,
// never a runtime thread). So a callback task puts the callback on that thread's queue and, for
// ACL_CALLBACK_BLOCK, waits until the thread ran it before the stream goes on.
#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>

#include "acl/acl.h"
#include "acl_api_util.h"

namespace {

using vigil::api::Guard;
using vigil::api::ResolveStream;
using vigil::rt::Stream;

// One callback handed to its thread; `done` is set once the thread ran it.
struct Pending {
  aclrtCallback fn = nullptr;
  void* user_data = nullptr;
  bool done = false;
};

struct ReportThread {
  std::deque<std::shared_ptr<Pending>> queue;
  int streams = 0;  // how many streams it serves
};

struct Reports {
  std::mutex mu;
  std::condition_variable cv;  // a callback was queued, ran, or a subscription changed
  std::map<const Stream*, uint64_t> thread_of;  // stream -> its thread
  std::map<uint64_t, ReportThread> threads;
};

Reports& State() {
  static Reports* r = new Reports;  // never destroyed: callbacks may run during exit
  return *r;
}

// Under r.mu: the stream leaves its thread; a thread with no stream and nothing queued goes.
void Unsubscribe(Reports& r, std::map<const Stream*, uint64_t>::iterator it) {
  auto t = r.threads.find(it->second);
  if (t != r.threads.end() && --t->second.streams <= 0 && t->second.queue.empty()) {
    r.threads.erase(t);
  }
  r.thread_of.erase(it);
  r.cv.notify_all();
}

uint64_t ThisThread() {
  return static_cast<uint64_t>(pthread_self());
}

}  // namespace

namespace vigil::api {

// aclrtDestroyStream: a destroyed stream has no thread any more (its address may be reused).
void ForgetSubscription(const Stream* stream) {
  Reports& r = State();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.thread_of.find(stream);
  if (it != r.thread_of.end()) Unsubscribe(r, it);
}

}  // namespace vigil::api

extern "C" {

ACL_FUNC_VISIBILITY aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus* status) {
  constexpr const char* kApi = "aclrtStreamQuery";
  CHECK_NOT_NULL(kApi, status);
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    if (s->Capturing()) {
      VIGIL_RT_FAIL(
          "{} failed: stream[{}] is capturing: its tasks do not run until the model "
          "does.",
          kApi, stream);
      return ACL_ERROR_RT_STREAM_CAPTURED;
    }
    if (s->CompletedTaskId() == s->LastTaskId()) {
      *status = ACL_STREAM_STATUS_COMPLETE;
    } else {
      *status = ACL_STREAM_STATUS_NOT_READY;
      s->Kick();  // a program that polls instead of synchronizing must see its tasks run
    }
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtLaunchHostFunc(aclrtStream stream, aclrtHostFunc fn, void* args) {
  constexpr const char* kApi = "aclrtLaunchHostFunc";
  CHECK_NOT_NULL(kApi, fn);
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    s->Enqueue(vigil::rt::TaskType::kHostFunc, [fn, args](std::string*) {
      fn(args);
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtSubscribeReport(uint64_t threadId, aclrtStream stream) {
  constexpr const char* kApi = "aclrtSubscribeReport";
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    Reports& r = State();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.thread_of.find(s.get());
    if (it != r.thread_of.end()) {
      VIGIL_RT_FAIL(
          "{} failed: stream[{}] is already served by thread[{}]: a stream has one "
          "callback thread (aclrtUnSubscribeReport it first).",
          kApi, stream, it->second);
      return ACL_ERROR_RT_STREAM_SUBSCRIBE;
    }
    r.thread_of[s.get()] = threadId;
    ++r.threads[threadId].streams;
    r.cv.notify_all();
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtUnSubscribeReport(uint64_t threadId, aclrtStream stream) {
  constexpr const char* kApi = "aclrtUnSubscribeReport";
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    Reports& r = State();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.thread_of.find(s.get());
    if (it == r.thread_of.end() || it->second != threadId) {
      VIGIL_RT_FAIL("{} failed: stream[{}] is not served by thread[{}].", kApi, stream, threadId);
      return ACL_ERROR_RT_STREAM_SUBSCRIBE;
    }
    Unsubscribe(r, it);
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtLaunchCallback(aclrtCallback fn, void* userData,
                                                 aclrtCallbackBlockType blockType,
                                                 aclrtStream stream) {
  constexpr const char* kApi = "aclrtLaunchCallback";
  CHECK_NOT_NULL(kApi, fn);
  if (blockType != ACL_CALLBACK_NO_BLOCK && blockType != ACL_CALLBACK_BLOCK) {
    VIGIL_RT_FAIL(
        "{} failed: param blockType[{}] must be ACL_CALLBACK_NO_BLOCK (0) or "
        "ACL_CALLBACK_BLOCK (1).",
        kApi, static_cast<int>(blockType));
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard(kApi, [&]() -> aclError {
    std::shared_ptr<Stream> s;
    aclError rc = ResolveStream(kApi, stream, &s);
    if (rc != ACL_SUCCESS) return rc;
    Reports& r = State();
    uint64_t thread = 0;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      auto it = r.thread_of.find(s.get());
      if (it == r.thread_of.end()) {
        VIGIL_RT_FAIL(
            "{} failed: stream[{}] has no callback thread: call aclrtSubscribeReport "
            "for it first.",
            kApi, stream);
        return ACL_ERROR_RT_STREAM_NO_CB_REG;
      }
      thread = it->second;
    }
    const bool block = blockType == ACL_CALLBACK_BLOCK;
    s->Enqueue(vigil::rt::TaskType::kHostFunc, [fn, userData, block, thread](std::string*) {
      Reports& st = State();
      auto p = std::make_shared<Pending>();
      p->fn = fn;
      p->user_data = userData;
      std::unique_lock<std::mutex> lock(st.mu);
      st.threads[thread].queue.push_back(p);
      st.cv.notify_all();
      if (block) st.cv.wait(lock, [&] { return p->done; });
      return ACL_SUCCESS;
    });
    return ACL_SUCCESS;
  });
}

ACL_FUNC_VISIBILITY aclError aclrtProcessReport(int32_t timeout) {
  constexpr const char* kApi = "aclrtProcessReport";
  if (timeout < -1) {
    VIGIL_RT_FAIL("{} failed: param timeout[{}] must be -1 (forever) or >= 0 ms.", kApi, timeout);
    return ACL_ERROR_INVALID_PARAM;
  }
  return Guard(kApi, [&]() -> aclError {
    Reports& r = State();
    const uint64_t me = ThisThread();
    std::unique_lock<std::mutex> lock(r.mu);
    auto has_work = [&] {
      auto t = r.threads.find(me);
      return t == r.threads.end() || !t->second.queue.empty();
    };
    if (r.threads.find(me) == r.threads.end()) {
      VIGIL_RT_FAIL("{} failed: thread[{}] serves no stream (call aclrtSubscribeReport first).",
                    kApi, me);
      return ACL_ERROR_RT_THREAD_SUBSCRIBE;
    }
    if (timeout < 0) {
      r.cv.wait(lock, has_work);
    } else if (!r.cv.wait_for(lock, std::chrono::milliseconds(timeout), has_work)) {
      return ACL_ERROR_RT_REPORT_TIMEOUT;  // no callback came: the loop calls again
    }
    auto t = r.threads.find(me);
    if (t == r.threads.end()) return ACL_ERROR_RT_THREAD_SUBSCRIBE;  // unsubscribed meanwhile
    std::shared_ptr<Pending> p = t->second.queue.front();
    t->second.queue.pop_front();
    if (t->second.streams <= 0 && t->second.queue.empty()) r.threads.erase(t);
    lock.unlock();
    p->fn(p->user_data);
    lock.lock();
    p->done = true;
    r.cv.notify_all();
    return ACL_SUCCESS;
  });
}

}  // extern "C"
