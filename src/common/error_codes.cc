#include "common/error_codes.h"

namespace vigil {
namespace {

// Templates: each "{}" takes the next argument verbatim. Titles, messages, causes and
// solutions are HCCL's English catalogue texts (hcomm's error-message JSON), so screen lines
// match CANN's byte for byte; "N/A" is HCCL's own "nothing to say". EI0013's title and
// punctuation follow the screen line CANN actually prints (seed document), which differs
// from the JSON ("Execution_Error_ROCE_CQE", ". 2.").
ErrorCodeInfo Entry(std::string_view code, std::string_view title, std::string_view stage,
                    std::string_view message, std::string_view arg_names,
                    std::string_view cause, std::string_view solution, std::string_view advice,
                    bool screen_cause = true) {
  ErrorCodeInfo info;
  info.code = code;
  info.title = title;
  info.stage = stage;
  info.message = message;
  info.cause = cause;
  info.solution = solution;
  info.screen_cause = screen_cause;
  info.advice = advice;
  info.arg_names = arg_names;
  return info;
}

std::vector<ErrorCodeInfo> BuildCatalogue() {
  std::vector<ErrorCodeInfo> v;
  v.push_back(Entry(
      "EI0001", "Config_Error_Invalid_Environment_Variable", "InitGroupStage",
      "Value {} for environment variable [{}] is invalid. Expected value: {}.",
      "value, env, expect", "N/A", "N/A",
      "Fix or unset the variable named in the message; `grep -r HCCL_ENV run/plog` shows the "
      "value every variable took."));
  v.push_back(Entry(
      "EI0002", "Communication_Error_Timeout", "TaskExecStage",
      "Communication operator execution waiting times out. Waiting peer end: {}; task "
      "information: {}; Communication operator information: {}; Communication: {}.",
      "remote_rankid, base_information, task_information, group_rank_content",
      "1. An exception occurs during the execution on some NPUs in the cluster. As a result, "
      "collective communication operation failed.2. The execution speed on some NPU in the "
      "cluster is too slow to complete a communication operation within the timeout interval. "
      "(The default timeout interval is 1800s, You can set the interval by using "
      "HCCL_EXEC_TIMEOUT.)3. The number of training samples of each NPU is inconsistent.4. "
      "Packet loss or other connectivity problems occur on the communication link.",
      "1. If this error is reported on part of these ranks, check other ranks to see whether "
      "other errors have been reported earlier.2. If this error is reported for all ranks, check "
      "whether the error reporting time is consistent (the maximum difference must not exceed "
      "1800s). If not, locate the cause or set the HCCL_EXEC_TIMEOUT environment variable to a "
      "larger value. 3. Ensure that the number of training samples of each NPU is consistent. 4. "
      "Check whether the completion queue element (CQE) of the error exists in the plog(grep -rn "
      "'error cqe'). If so, check the network connection status. For details about the "
      "troubleshooting method, search for the keyword \"EI0002\" on "
      "https://www.hiascend.com/en/document/.",
      "Find the rank that failed first (heartbeat events, Cluster Exception Location); if every "
      "rank timed out, compare the operators each rank issued (Entry- lines, "
      "HCCL_ENTRY_LOG_ENABLE=1) and the times the ranks reported the error."));
  v.push_back(Entry(
      "EI0003", "Invalid_Argument_Collective_Communication_Operator", "TaskExecStage",
      "Failed to verify parameters of operator {} (operator name). Value {} for parameter {} is "
      "invalid. The expected value is {}.",
      "ccl_op, value, parameter, expect", "N/A", "N/A",
      "Fix the argument named in the message in the call to the operator."));
  v.push_back(Entry(
      "EI0004", "File_Operation_Error_Parse", "InitGroupStage",
      "Failed to parse the ranktable file {}. Reason: {}", "ranktable_path, error_reason", "N/A",
      "N/A", "Check that the rank table path exists, is readable and holds valid JSON."));
  v.push_back(Entry(
      "EI0005", "Invalid_Argument", "InitChannelStage",
      "The arguments for collective communication are inconsistent between ranks, ccl_op {}, "
      "group {}, parameter {}, local end {}, remote end {}.",
      "ccl_op, group, para_name, local_para, remote_para", "N/A", "N/A",
      "The ranks issued different operators or arguments: compare the call sequences of the two "
      "ranks (`grep -r \"CMD information\" debug/plog`, HCCL_ENTRY_LOG_ENABLE=1)."));
  v.push_back(Entry(
      "EI0006", "Communication_Error_Get_Socket", "InitChannelStage",
      "Getting socket times out. Reason: {}", "reason", "N/A", "N/A",
      "Read the CONNECT TIMEOUT DETECT RESULT block in the debug plog: it names the failing "
      "pair. No detect event means the ranks called different operators. Check that the peer "
      "is alive and started within HCCL_CONNECT_TIMEOUT."));
  v.push_back(Entry(
      "EI0007", "Resource_Error", "InitGroupStage",
      "Failed to allocate resource {} with info {}. Reason: Resources are exhausted.",
      "resource_type, resource_info", "N/A", "N/A",
      "Check the process limits (ulimit -n, memory) and the number of communicators."));
  v.push_back(Entry(
      "EI0008", "Package_Error_Incorrect_HCCL_Version", "InitChannelStage",
      "The HCCL versions are inconsistent. The local version is {}, while the remote version is "
      "{}.",
      "local_version, remote_version", "N/A", "Install the same HCCL version.",
      "Install the same Vigil build on every node."));
  v.push_back(Entry(
      "EI0009", "Communication_Error_Initialize_Transport", "InitChannelStage",
      "Device {} transport init error. Reason: {}.", "device_id, reason", "N/A",
      "Use the following hccn_tool commands to check whether the port link is down. (The scope "
      "of i represents the number of NPUs of each node. 8 is used as an example.) 1. for i in "
      "{0..7}; do hccn_tool -i $i -optical -g; done | grep present: Check whether the optical "
      "module is in position. 2. for i in {0..7}; do hccn_tool -i $i -ip -g; done. Check whether "
      "the IP address is configured. 3. for i in {0..7}; do hccn_tool -i $i -lldp -g: Check "
      "whether the switch is connected.",
      "Check the LINK_ERROR_INFO table and the network between the two ranks."));
  v.push_back(Entry(
      "EI0010", "Communication_Error_P2P", "InitChannelStage",
      "P2P communication failed. Reason: {}", "reason", "N/A",
      "Ensure that the NPU card is normal and entering environment variables 'export "
      "HCCL_INTRA_ROCE_ENABLE=1'.",
      "Force the TCP transport (VIGIL_TRANSPORT=tcp) to rule out the shared-memory path."));
  v.push_back(Entry(
      "EI0011", "Resource_Error_Insufficient_Device_Memory", "InitChannelStage",
      "Failed to allocate [{}] bytes of NPU memory.", "memory_size",
      "Allocation failure due to insufficient NPU memory.",
      "Stop unnecessary processes and ensure the required memory is available.",
      "Link resources (QPs) did not fit in device memory: reduce the number of links "
      "(HCCL_RDMA_QPS_PER_CONNECTION), free device memory, or raise VIGIL_DEVICE_MEMORY. The CCL "
      "buffer is a different failure (EI9001, HCCL_BUFFSIZE)."));
  // The screen line CANN prints for EI0012 carries no cause/solution (seed document).
  v.push_back(Entry(
      "EI0012", "Execution_Error_SDMA", "TaskExecStage",
      "SDMA memory copy task exception occurred. Remote rank: [{}]. Base information: [{}]. Task "
      "information: [{}]. Communicator information: [{}].",
      "remote_rankid, base_information, task_information, group_rank_content",
      "1. Network connection exception occurred during the SDMA task execution. 2. The peer "
      "process exits abnormally. 3. The input or output memory address is not allocated, the "
      "actual allocated size is smaller than the input data size, or the memory is freed before "
      "the operator execution is complete.",
      "1. Check whether the network link is abnormal during the execution. 2. Check whether a "
      "process in the cluster exits before an error is reported. If yes, locate the cause of the "
      "process exit. 3. Check whether the size of the input/output memory passed to the "
      "communication operator meets the expectation, and whether the input/output memory or "
      "communicator is freed or destroyed before the operator execution is complete.",
      "Compare src/dst/size in the task information with the buffers the program allocated: a "
      "freed or too-small buffer, or a destroyed communicator, is the usual cause.",
      /*screen_cause=*/false));
  v.push_back(Entry(
      "EI0013", "Execution Error ROCE CQE", "TaskExecStage",
      "An error CQE occurred during operator execution. Local information: server {}, device ID "
      "{}, device IP {}. Peer information: server {}, device ID {}, device IP {}.",
      "localServerId, localDeviceId, localDeviceIp, remoteServerId, remoteDeviceId, "
      "remoteDeviceIp",
      "1. The network between two devices is abnormal. For example, the network port is "
      "intermittently disconnected.2. The peer process exits abnormally in advance. As a result, "
      "the local end cannot receive the response from the peer end.",
      "1. Check whether the network devices between the two ends are abnormal.2. Check whether "
      "the peer process exits first. If yes, check the cause of the process exit.",
      "Look at the peer named in the message: did its process exit first (its own logs, "
      "heartbeat events), or is the link between the two hosts down?"));
  v.push_back(Entry(
      "EI0014", "Config_Error_Ranktable", "InitGroupStage",
      "Value {} for ranktable variable {} is invalid. Expected value: {}.",
      "value, variable, expect",
      "Failed to verify the content of the ranktable file, possibly due to inconsistency between "
      "the file content and the actual device information.",
      "Try again with a valid cluster configuration in the ranktable file. Ensure that the "
      "configuration matches the operating environment.",
      "Correct the rank table field named in the message."));
  v.push_back(Entry(
      "EI0015", "Communication_Error_Ranktable_Detect", "InitGroupStage",
      "Failed to collect cluster information of the communicator based on rootInfo detection. "
      "Reason: {}.",
      "error_reason", "N/A",
      "1. Check whether all ranks in the communicator have delivered the communicator creation "
      "interface. 2. Check the connectivity between the host networks of all nodes and the "
      "server node. 3. Check whether the HCCL_SOCKET_IFNAME environment variable of all nodes is "
      "correctly configured. 4. Increase the timeout by configuring the HCCL_CONNECT_TIMEOUT "
      "environment variable.",
      "On the root, compare `total connected num` with the expected ranks: the missing ranks "
      "never started or cannot reach the root's IP and port."));
  v.push_back(Entry(
      "EI0016", "Config_Error", "InitGroupStage",
      "Value {} for config {} is invalid. Expected value: {}.", "value, variable, expect", "N/A",
      "N/A", "Make the named configuration the same on every rank."));
  v.push_back(Entry(
      "EI0017", "Config_Error_Ranktable", "InitGroupStage",
      "Config {} is missing in the ranktable file.", "config", "N/A", "N/A",
      "Add the missing field to the rank table."));
  v.push_back(Entry(
      "EI0018", "Execution_Error_UB_CQE", "TaskExecStage",
      "An error CQE occurred during operator execution. Local information: server {}, device ID "
      "{}, device IP {}. Peer information: server {}, device ID {}, device IP {}.",
      "localServerId, localDeviceId, localDeviceIp, remoteServerId, remoteDeviceId, "
      "remoteDeviceIp",
      "1. The network between two devices is abnormal. For example, the network port is "
      "intermittently disconnected. 2. The peer process exits unexpectedly in advance. As a "
      "result, the local end cannot receive the response from the peer end. 3.The hardware of "
      "the HBM or UB chip processing module of either device is abnormal.",
      "1. Check whether the network devices between the two ends are abnormal. Generally, packet "
      "loss occurs due to intermittent disconnection of the port. If the ping test fails, check "
      "whether the port is linkdown or the network configuration is incorrect.2. Check whether "
      "the peer process exits first. If yes, check the reason why the process exit.3.Use the RAS "
      "fault check mechanism to check whether the hardware of the HBM or UB chip processing "
      "module of either device is abnormal.If the hardware is abnormal, contact Huawei technical "
      "support.",
      "Look at the peer named in the message first."));
  v.push_back(Entry(
      "EI0019", "Communication_Error_Bind_IP_Port", "InitGroupStage",
      "Failed to enable listening for the host network adapter socket. Reason: {}", "reason",
      "N/A",
      "1. Check whether this port has been occupied by another process. If yes, you can make "
      "adjustment using the environment variable HCCL_IF_BASE_PORT and use sysctl -w "
      "net.ipv4.ip_local_reserved_ports=****-**** to adjust the scope of reserved ports. 2. "
      "Check whether the service process is started multiple times on a device during this "
      "service.",
      "Find the process holding the port (`ss -ltnp`), or move with HCCL_IF_BASE_PORT "
      "(0 lets the kernel choose)."));
  v.push_back(Entry(
      "EI0020", "Communication_Error_Bind_IP_Port", "InitChannelStage",
      "Failed to enable listening for the NPU network adapter socket. Reason: {}", "reason",
      "N/A",
      "Check whether the single-card multi-process scenario is used. If yes, configure the port "
      "number using the environment variable HCCL_NPU_SOCKET_PORT_RANGE.",
      "Find the process holding the port; several processes on one device need distinct ports."));
  // Vigil's own. HCCL has no EI code for a CCL-buffer OOM (the driver reports it), yet it is
  // the failure HCCL_BUFFSIZE users hit. HCCL uses only EI9999 in the 9xxx block, so EI9001
  // cannot collide with a present or future HCCL code numbered upward from EI0001.
  v.push_back(Entry(
      "EI9001", "Resource_Error_Insufficient_CCL_Buffer", "InitGroupStage",
      "Failed to allocate [{}] of device memory for the CCL buffers (2 x HCCL_BUFFSIZE [{}]MB). "
      "Reason: {}",
      "buffer_size, buffsize_mb, reason",
      "Device memory cannot hold the input and output CCL buffers of the communicator (2 x "
      "HCCL_BUFFSIZE per communicator).",
      "Lower HCCL_BUFFSIZE or HcclCommConfig.hcclBufferSize, create fewer communicators, or free "
      "device memory.",
      "Each communicator takes 2 x HCCL_BUFFSIZE (default 200 MB) of device memory: "
      "`grep -r HCCL_BUFFSIZE run/plog` shows the value in effect."));
  v.push_back(Entry(
      "EI9999", "Inner_Error", "TaskExecStage", "Inner error. Reason: {}", "reason",
      "An internal error occurred in the communication library.",
      "Collect the run and debug plogs of every rank and report the problem.",
      "Read the first ERROR line of the debug plog of the rank that failed first."));
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
