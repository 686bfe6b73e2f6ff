#include "common/error_codes.h"

namespace vigil {
namespace {

// Templates: each "{}" takes the next argument verbatim. Titles, messages, causes and
// solutions are HCCL's English texts where known, so screen lines match CANN's byte for byte.
std::vector<ErrorCodeInfo> BuildCatalogue() {
  std::vector<ErrorCodeInfo> v;
  v.push_back({"EI0001", "Config_Error_Invalid_Environment_Variable", "InitGroupStage",
               "Environment variable [{}] is invalid. Value: [{}]. Expected: [{}].",
               "The value of the environment variable is out of the valid range or malformed.",
               "Set the environment variable to a value in the expected range, or unset it to "
               "use the default.",
               true, "grep HCCL_ENV in run/plog to see every variable's effective value."});
  v.push_back({"EI0002", "Communication_Error_Timeout", "TaskExecStage",
               "The wait execution of the Notify register times out. Reason: The Notify "
               "register has not received the Notify record from remote rank [{}].base "
               "information: [{}]. task information: [{}]. group information: [{}].",
               "1. An exception occurs during the execution on some NPUs in the cluster. As a "
               "result, collective communication operation failed.2. The execution speed on "
               "some NPU in the cluster is too slow to complete a communication operation "
               "within the timeout interval. (default 1800s, You can set the interval by using "
               "HCCL_EXEC_TIMEOUT.)3. The number of training samples of each NPU is "
               "inconsistent.4. Packet loss or other connectivity problems occur on the "
               "communication link.",
               "1. If this error is reported on part of these ranks, check other ranks to see "
               "whether other errors have been reported earlier.2. If this error is reported "
               "for all ranks, check whether the error reporting time is consistent (the "
               "maximum difference must not exceed 1800s). If not, locate the cause or adjust "
               "the locate the cause or set the HCCL_EXEC_TIMEOUT environment variable to a "
               "larger value.3. Check whether the completion queue element (CQE) of the error "
               "exists in the plog(grep -rn 'error cqe'). If so, check the network connection "
               "status. (For details, see the TLS command and HCCN connectivity check "
               "examples.)4. Ensure that the number of training samples of each NPU is "
               "consistent.",
               true, "Find the rank that failed first (Cluster Exception Location, heartbeat "
               "events); the others only waited for it."});
  v.push_back({"EI0003", "Invalid_Argument_Collective_Communication_Operator", "TaskExecStage",
               "In {}, value [{}] for parameter [{}] is invalid. Expected: {}.",
               "The argument passed to the collective communication interface is invalid.",
               "Check the argument and pass a value in the expected range.", true,
               "Fix the argument named in the message."});
  v.push_back({"EI0004", "File_Operation_Error_Parse", "InitGroupStage",
               "The ranktable or rank information is invalid. Reason: [{}]. Path: [{}].",
               "The rank table file does not exist, cannot be read, or is not valid JSON.",
               "Check the rank table path and its content.", true,
               "Check the rank table path and its JSON syntax."});
  v.push_back({"EI0005", "Invalid_Argument", "InitChannelStage",
               "The arguments for collective communication are inconsistent between ranks: "
               "tag [{}], parameter [{}], local [{}], remote [{}]",
               "The ranks called different operators, or the same operator with different "
               "arguments (count, data type, reduce op, buffer size).",
               "Check that every rank issues the same collective operators in the same order "
               "with the same arguments.",
               true, "Compare the call sequence of the two ranks named in the message."});
  v.push_back({"EI0006", "Communication_Error_Get_Socket", "InitChannelStage",
               "Getting socket times out. Reason: {}",
               "1. The remote end did not initiate a connect request within the timeout "
               "interval. Some NPUs are slow or exit abnormally.2. The communication network "
               "between the two ends is abnormal.",
               "1. Check whether the remote end exits abnormally or runs slowly (the lead time "
               "must not exceed HCCL_CONNECT_TIMEOUT).2. Check the network connectivity between "
               "the two ends.",
               true, "Read the CONNECT TIMEOUT DETECT RESULT block: it names the failing pair."});
  v.push_back({"EI0007", "Resource_Error", "InitGroupStage",
               "Failed to allocate resource [{}] with size [{}].",
               "Resources of the system are insufficient.",
               "Release unnecessary resources and try again.", true,
               "Check the memory and file-descriptor limits of the process."});
  v.push_back({"EI0008", "Package_Error_Incorrect_HCCL_Version", "InitChannelStage",
               "The HCCL versions are inconsistent between ranks: local [{}], remote [{}].",
               "Different versions of the communication library are installed on the nodes.",
               "Install the same version on every node.", true,
               "Install the same Vigil build on every node."});
  v.push_back({"EI0009", "Communication_Error_Initialize_Transport", "InitChannelStage",
               "Failed to initialize the transport. Reason: [{}].",
               "The link between the two ranks could not be established.",
               "Check the network between the two ranks and the peer process.", true,
               "Check the link named in LINK_ERROR_INFO."});
  v.push_back({"EI0010", "Communication_Error_P2P", "InitChannelStage",
               "Failed to enable P2P access between devices [{}] and [{}].",
               "Peer-to-peer access between the two devices is not available.",
               "Check the device topology and the link type.", true,
               "Check that both ranks can use the same host transport."});
  v.push_back({"EI0011", "Resource_Error_Insufficient_Device_Memory", "InitChannelStage",
               "Failed to allocate [{}] bytes of NPU memory.",
               "Allocation failure due to insufficient NPU memory.",
               "Stop unnecessary processes and ensure the required memory is available.", true,
               "Reduce the number of links (HCCL_RDMA_QPS_PER_CONNECTION), release device "
               "memory, or raise VIGIL_DEVICE_MEMORY. For the CCL buffer see EI9001."});
  v.push_back({"EI0012", "Execution_Error_SDMA", "TaskExecStage",
               "SDMA memory copy task exception occurred. Remote rank: [{}]. Base information: "
               "[{}]. Task information: [{}]. Communicator information: [{}].",
               "1. The memory address of the copy task is invalid or has been freed.2. The "
               "buffer is smaller than the amount of data copied.3. The link is abnormal.",
               "Check that the send and receive buffers are valid, large enough and not freed "
               "before the operator completes.",
               false, "Check the src/dst addresses and size in the task information."});
  v.push_back({"EI0013", "Execution Error ROCE CQE", "TaskExecStage",
               "An error CQE occurred during operator execution. Local information: server {}, "
               "device ID {}, device IP {}. Peer information: server {}, device ID {}, device "
               "IP {}.",
               "1. The network between two devices is abnormal. For example, the network port "
               "is intermittently disconnected.2. The peer process exits abnormally in advance. "
               "As a result, the local end cannot receive the response from the peer end.",
               "1. Check whether the network devices between the two ends are abnormal.2. Check "
               "whether the peer process exits first. If yes, check the cause of the process "
               "exit.",
               true, "Check the peer named in the message: did it exit first, or is the link down?"});
  v.push_back({"EI0014", "Config_Error_Ranktable", "InitGroupStage",
               "The value [{}] of field [{}] in the ranktable is invalid. Reason: {}",
               "A field of the rank table has an invalid value.",
               "Correct the field in the rank table.", true, "Fix the rank table field."});
  v.push_back({"EI0015", "Communication_Error_Ranktable_Detect", "InitGroupStage",
               "Failed to detect the cluster information. Reason: {}",
               "Some ranks did not connect to the root within HCCL_CONNECT_TIMEOUT, or the root "
               "information (IP, port) differs between ranks.",
               "Check that all ranks started, use the same root information, and can reach the "
               "root's IP and port.",
               true, "Compare the connected rank list of the root with the expected ranks."});
  v.push_back({"EI0016", "Config_Error", "InitGroupStage",
               "The configuration is inconsistent between ranks: [{}]. local [{}], remote [{}].",
               "A configuration (e.g. TLS) differs between ranks.",
               "Use the same configuration on every rank.", true,
               "Make the named configuration the same on every rank."});
  v.push_back({"EI0017", "Config_Error_Ranktable", "InitGroupStage",
               "The field [{}] is missing in the ranktable.",
               "A required field is missing from the rank table.",
               "Add the field to the rank table.", true, "Add the missing field."});
  v.push_back({"EI0018", "Execution_Error_UB_CQE", "TaskExecStage",
               "An error CQE occurred on the UB fabric. {}",
               "The UB link between the two devices is abnormal.",
               "Check the link between the two devices.", true, "Check the link."});
  v.push_back({"EI0019", "Communication_Error_Bind_IP_Port", "InitGroupStage",
               "Failed to bind the IP port. Reason: [{}]. IP: [{}], port: [{}].",
               "The port is already in use, or the IP address is not configured on this host.",
               "Check whether the port is occupied (netstat/ss) and whether the IP address is "
               "correct; use HCCL_IF_BASE_PORT or HCCL_HOST_SOCKET_PORT_RANGE to choose other "
               "ports.",
               true, "Find the process holding the port (ss -ltnp) or change HCCL_IF_BASE_PORT."});
  v.push_back({"EI0020", "Communication_Error_Bind_IP_Port", "InitChannelStage",
               "Failed to bind the NPU NIC IP port. Reason: [{}]. IP: [{}], port: [{}].",
               "The port is already in use, or the device IP address is not configured.",
               "Check whether the port is occupied and whether the device IP is correct.", true,
               "Find the process holding the port."});
  // Vigil's own: HCCL reports the CCL buffer OOM through the driver (no EI code). The 9xxx
  // block is left unused by HCCL apart from EI9999, so EI9001 cannot collide.
  v.push_back({"EI9001", "Resource_Error_Insufficient_CCL_Buffer", "InitGroupStage",
               "Failed to allocate the communication buffer of [{}] bytes (HCCL_BUFFSIZE [{}]MB "
               "x 2) for communicator [{}].",
               "The device memory cannot hold the send and receive CCL buffers of the "
               "communicator (2 x HCCL_BUFFSIZE per communicator).",
               "Lower HCCL_BUFFSIZE or HcclCommConfig.hcclBufferSize, reduce the number of "
               "communicators, or free device memory.",
               true, "Each communicator takes 2 x HCCL_BUFFSIZE of device memory."});
  v.push_back({"EI9999", "Inner_Error", "TaskExecStage", "Inner error. Reason: {}",
               "An internal error occurred.",
               "Collect the logs (run and debug plog) and contact technical support.", true,
               "Look at the first ERROR line of the debug plog."});
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
    out.append(" Possible Cause: ").append(info.cause);
    out.append(" Solution: ").append(info.solution);
  }
  return out;
}

}  // namespace vigil
