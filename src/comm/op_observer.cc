#include "comm/op_observer.h"

#include <atomic>

namespace vigil::comm {

namespace {
std::atomic<OpObserver*> g_observer{nullptr};
}

void SetOpObserver(OpObserver* observer) { g_observer.store(observer); }
OpObserver* GetOpObserver() { return g_observer.load(); }

}  // namespace vigil::comm
