#include "common/error_codes.h"

#include "common/knowledge_base.h"

namespace vigil {
namespace {

// The catalogue is the knowledge base's HCCL entries (data/kb/hccl.json, each entry's "hccl"
// object): titles, messages, causes and solutions are HCCL's English catalogue texts, so screen
// lines match CANN's byte for byte; "N/A" is HCCL's own "nothing to say". The views point into
// the knowledge base, which lives as long as the process.
std::vector<ErrorCodeInfo> BuildCatalogue() {
  std::vector<ErrorCodeInfo> v;
  for (const kb::Entry& e : kb::Get().entries()) {
    if (!e.has_hccl) continue;
    ErrorCodeInfo info;
    info.code = e.code;
    info.title = e.title;
    info.stage = e.stage;
    info.message = e.message;
    info.cause = e.hccl_cause;
    info.solution = e.solution;
    info.screen_cause = e.screen_cause;
    info.advice = e.advice;
    info.arg_names = e.arg_names;
    v.push_back(info);
  }
  return v;
}

}  // namespace

const std::vector<ErrorCodeInfo>& AllErrorCodes() {
  static const std::vector<ErrorCodeInfo> kCatalogue = BuildCatalogue();
  return kCatalogue;
}

const ErrorCodeInfo* FindErrorCode(std::string_view code) {
  for (const auto& info : AllErrorCodes()) {
    if (info.code == code) return &info;
  }
  return nullptr;
}

std::string RenderErrorMessage(const ErrorCodeInfo& info, const std::vector<std::string>& args) {
  std::string out;
  out.reserve(info.message.size() + 64);
  size_t next_arg = 0;
  const std::string_view t = info.message;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '{' && i + 1 < t.size() && t[i + 1] == '}') {
      if (next_arg < args.size()) out += args[next_arg];
      ++next_arg;
      ++i;
    } else {
      out += t[i];
    }
  }
  return out;
}

std::string RenderScreenError(const ErrorCodeInfo& info, const std::vector<std::string>& args) {
  std::string out;
  out.reserve(256);
  out.append(info.title).append("(").append(info.code).append("): ");
  out += RenderErrorMessage(info, args);
  if (info.screen_cause) {
    // HCCL's "N/A" means there is nothing to print.
    if (!info.cause.empty() && info.cause != "N/A") out.append(" Possible Cause: ").append(info.cause);
    if (!info.solution.empty() && info.solution != "N/A") {
      out.append(" Solution: ").append(info.solution);
    }
  }
  return out;
}

std::string RenderCmdCheckFail(std::string_view para, std::string_view local,
                               std::string_view remote) {
  std::string out = "CMD information ";
  out += para;
  out += " check fail. local[";
  out += local;
  out += "], remote[";
  out += remote;
  out += "]";
  return out;
}

}  // namespace vigil
