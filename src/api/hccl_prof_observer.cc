// Names HCCL ops in the profiling trace (runtime/profiler.h): while a device is profiled, each
// op queued on one of its streams labels its stream task with the op's type, count, data type,
// reduction and algorithm, so the trace says "AllReduce" rather than "Hccl".
#include <fmt/format.h>

#include <string>

#include "api/hccl_api_util.h"
#include "comm/op_observer.h"
#include "common/dtype.h"
#include "runtime/profiler.h"

namespace vigil::api {
namespace {

class ProfilerLabels : public comm::OpObserver {
 public:
  void OnEnqueue(const comm::OpRecord& op) override {
    if (!rt::prof::Active()) return;
    rt::prof::Label label;
    label.name = std::string(comm::OpTypeName(op.type));
    label.args = {{"tag", op.tag()},
                  {"index", std::to_string(op.index)},
                  {"count", std::to_string(op.count)},
                  {"data_type", std::string(DataTypeName(op.dtype))},
                  {"reduce_op", std::string(ReduceOpName(op.reduce))},
                  {"root", std::to_string(op.root)},
                  {"rank", fmt::format("{}/{}", op.rank, op.nranks)},
                  {"alg_type", op.alg_type()}};
    rt::prof::LabelTask(op.device, op.stream_id, op.task_id, std::move(label));
  }
  void OnStart(const comm::OpRecord&, SteadyClock::time_point) override {}
  void OnFinish(const comm::OpRecord&, HcclResult, const comm::OpFailure*,
                SteadyClock::time_point) override {}
};

}  // namespace

void InstallProfilerLabels() {
  static bool installed = comm::AddOpObserver(new ProfilerLabels());  // lives for the process
  (void)installed;
}

}  // namespace vigil::api
