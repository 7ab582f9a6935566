// torch_trnccl._C: the process group class, for torch_trnccl/__init__.py to register.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.h"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "trnccl's torch.distributed process group (use `import torch_trnccl`)";
  // c10d's Python types (ProcessGroup, Store) must be registered before ours derives from them.
  py::module_::import("torch.distributed");
  py::class_<torch_trnccl::ProcessGroupTrnccl, c10d::ProcessGroup,
             c10::intrusive_ptr<torch_trnccl::ProcessGroupTrnccl>>(m, "ProcessGroupTrnccl")
      .def(py::init<const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds>(),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           // Init blocks until every rank joined: other Python threads keep running meanwhile.
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("device", &torch_trnccl::ProcessGroupTrnccl::device,
                             "The emulated NeuronCore this process drives")
      .def("failed_ranks", &torch_trnccl::ProcessGroupTrnccl::failedRanks,
           "The group ranks whose process is gone (probed now, at most ~1 s)",
           py::call_guard<py::gil_scoped_release>())
      .def("shrink", &torch_trnccl::ProcessGroupTrnccl::shrink, py::arg("exclude_ranks"),
           "A new group of the other ranks over trncclCommShrink(TRNCCL_SHRINK_ABORT); "
           "collective over them. This group is revoked.",
           py::call_guard<py::gil_scoped_release>());
  m.def("version", [] {
    int version = 0;
    trncclGetVersion(&version);
    return version;
  });
}
