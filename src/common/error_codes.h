// The one catalogue of HCCL's EIxxxx error codes: title, message template, possible cause and
// solution. The library's screen errors, its log lines and `vigil diagnose` all read it here; its
// texts are the "hccl" objects of the knowledge base (data/kb/hccl.json, common/knowledge_base.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vigil {

struct ErrorCodeInfo {
  std::string_view code;       // "EI0012"
  std::string_view title;      // screen title: "Execution_Error_SDMA"
  std::string_view stage;      // "InitGroupStage", "InitChannelStage", "TaskExecStage"
  std::string_view message;    // fmt template with {} placeholders, e.g. "... Remote rank: [{}]."
  std::string_view cause;      // "Possible Cause: ..." text
  std::string_view solution;   // "Solution: ..." text
  // Whether the screen line carries "Possible Cause: ... Solution: ..." after the message
  // (HCCL's EI0012 screen line does not; most others do).
  bool screen_cause = true;
  // What `vigil diagnose` tells the user to check first (Vigil's own text, not HCCL's).
  std::string_view advice = {};
  // Names of the template's arguments in order, as HCCL's catalogue lists them
  // ("value, env, expect"): the order callers pass `args` in.
  std::string_view arg_names = {};
};

// nullptr when the code is not in the catalogue.
const ErrorCodeInfo* FindErrorCode(std::string_view code);
const std::vector<ErrorCodeInfo>& AllErrorCodes();

// The message with its placeholders filled in order (missing args print as "[]" pieces left
// empty; extra args are ignored). Never throws.
std::string RenderErrorMessage(const ErrorCodeInfo& info, const std::vector<std::string>& args);

// The full screen text after the "[PID: n] time " prefix:
// "Title(EIxxxx): message Possible Cause: ... Solution: ...". Cause and solution are left out
// when the entry says so (screen_cause == false) and each one when HCCL's text is "N/A".
std::string RenderScreenError(const ErrorCodeInfo& info, const std::vector<std::string>& args);

// HCCL's own run-log form of a parameter disagreement between two ranks
// (rank_consistentcy_checker.cc), printed beside Vigil's line so that HCCL's grep habits
// (`grep -r "CMD information" debug/plog`) find it: "CMD information <para> check fail.
// local[<local>], remote[<remote>]". `para` is one of HCCL's names: tag, cmdType, op, count,
// dataType, cclbufferSize (values as HCCL prints them: enum numbers, bytes).
std::string RenderCmdCheckFail(std::string_view para, std::string_view local,
                               std::string_view remote);
// The stage prefix HCCL logs that line under.
inline constexpr std::string_view kCmdCheckFailStage = "[InitChannelStage][ParameterConflict]";

}  // namespace vigil
