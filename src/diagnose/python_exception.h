// The line a Python traceback ends with names the exception that ended it: "<Type>: <message>"
// or the type alone, the type a dotted name ending in Error or Exception, possibly with its cause
// in parentheses ("ray.exceptions.RayTaskError(RayActorError): ray::main_task() ...") and after
// whatever a launcher or a copy put before it ("[rank3]: RuntimeError: ...", "123 DataError: ...").
#pragma once

#include <string_view>

namespace vigil::diagnose {

// The exception type the line names ("RuntimeError", "ray.exceptions.RayTaskError"), or empty.
// A bare "Error: ..." is not a Python exception and is not taken.
std::string_view TracebackExceptionType(std::string_view line);

}  // namespace vigil::diagnose
