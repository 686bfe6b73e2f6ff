// vigil_torch._C: the factory torch.distributed calls for backend "vigil", last_error() and
// shrink().
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <optional>
#include <vector>

#include "process_group_vigil.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "Vigil's c10d backend (ProcessGroupVigil) for torch.distributed";
  m.def(
      "create_process_group",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         const std::chrono::duration<float>& timeout) -> c10::intrusive_ptr<c10d::ProcessGroup> {
        return c10::make_intrusive<vigil_torch::ProcessGroupVigil>(
            store, rank, size, std::chrono::duration_cast<std::chrono::milliseconds>(timeout));
      },
      py::arg("store"), py::arg("rank"), py::arg("world_size"), py::arg("timeout"),
      // Rendezvous blocks on the store: let other Python threads run meanwhile.
      py::call_guard<py::gil_scoped_release>());
  m.def(
      "last_error",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg) -> std::string {
        auto* v = dynamic_cast<vigil_torch::ProcessGroupVigil*>(pg.get());
        if (v == nullptr) throw std::invalid_argument("not a vigil process group");
        return v->LastError();
      },
      py::arg("process_group"));
  m.def(
      "shrink",
      [](const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
         const std::optional<std::vector<uint32_t>>& exclude,
         bool abort) -> c10::intrusive_ptr<c10d::ProcessGroup> {
        auto* v = dynamic_cast<vigil_torch::ProcessGroupVigil*>(pg.get());
        if (v == nullptr) throw std::invalid_argument("not a vigil process group");
        return v->Shrink(exclude ? &*exclude : nullptr, abort);
      },
      py::arg("process_group"), py::arg("exclude"), py::arg("abort"),
      // The survivors' agreement and the new rendezvous block: other threads run meanwhile.
      py::call_guard<py::gil_scoped_release>());
}
