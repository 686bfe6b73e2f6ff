// Alarms that a component raises and later clears. The device plugin relays the switch chip's
// faults with a state: "Assertion:0x1" raises a fault code, "Assertion:0x0" clears it (often in a
// later, rotated file). A fault that was cleared is history, and a clearing line is no fault at
// all: neither may be taken as the job's root cause.
#pragma once

#include "diagnose/job_model.h"

namespace vigil::diagnose::rules {

// The job the evidence rule should weigh: `job` itself when no alarm was cleared, else a copy in
// *scratch without the clearing lines and without the raises they cleared.
const Job& WithoutClearedAlarms(const Job& job, Job* scratch);

}  // namespace vigil::diagnose::rules
