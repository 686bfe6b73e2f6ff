// Alarms raised and later cleared (rules/alarms.cc): the device plugin's switch fault lines, in a
// rotated file and the current one, as ascend-device-plugin prints them (the form of MindCluster's
// ascend-faultdiag test data, tests/diagnose/ascend_fd/kg_device_plugin).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/diagnose.h"

namespace vigil::diagnose {
namespace {
namespace fs = std::filesystem;

std::string Line(const std::string& time, const std::string& code, int assertion) {
  return "[WARN]     2024/01/10 " + time +
         " 17      deviceswitch/ascend_switch.go:190    switch subscribe got "
         "fault:deviceswitch.SwitchFaultEvent{EventType:0x4, FaultID:0xf1ff09, AssembledFaultCode:\"[" +
         code + "]\", PeerPortDevice:0x1, PeerPortId:0x2, SwitchChipId:0x0, SwitchPortId:0x0, Severity:0x0, "
         "Assertion:0x" + std::to_string(assertion) + ", EventSerialNum:0, NotifySerialNum:0, AlarmRaisedTime:0, "
         "AdditionalParam:\"\", AdditionalInfo:\"\"}, faultCode:[" + code + "]\n";
}

class AlarmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/vigil_alarm_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  DiagnoseResult Run() {
    DiagnoseOptions o;
    o.inputs = {dir_.string()};
    o.threads = 1;
    return Diagnose(o);
  }
  fs::path dir_;
};

// Raised in the rotated file, cleared in the current one: nothing is left to blame.
TEST_F(AlarmTest, ClearedFaultIsNotAVerdict) {
  Write("devicePlugin-2024-01-10T03-30-45.197.log", Line("03:28:38.643290", "0x00f1ff09,155912,npu,na", 1));
  Write("devicePlugin.log", Line("03:30:38.643330", "0x00f1ff09,155912,npu,na", 0));
  DiagnoseResult r = Run();
  for (const Finding& f : r.findings) EXPECT_NE(f.kb, "network.switch_fault_event") << f.title;
}

// The older form of the state ("Assertion: 0") clears as well.
TEST_F(AlarmTest, OlderStateFormClears) {
  std::string raise = Line("03:28:38.643290", "0x00f103b0,155907,na,na", 1);
  std::string clear = Line("03:32:38.643290", "0x00f103b0,155907,na,na", 0);
  clear.replace(clear.find("Assertion:0x0"), 13, "Assertion: 0");
  Write("devicePlugin.log", raise + clear);
  DiagnoseResult r = Run();
  for (const Finding& f : r.findings) EXPECT_NE(f.kb, "network.switch_fault_event") << f.title;
}

// One fault cleared, another still raised: the verdict rests on the raised one.
TEST_F(AlarmTest, UnclearedFaultStays) {
  Write("devicePlugin-2024-01-10T03-30-45.197.log",
        Line("03:28:38.643290", "0x00f1ff09,155912,cpu,na", 1) + Line("03:28:38.643290", "0x00f1ff09,155912,npu,na", 1));
  Write("devicePlugin.log", Line("03:30:38.643330", "0x00f1ff09,155912,npu,na", 0));
  DiagnoseResult r = Run();
  ASSERT_FALSE(r.findings.empty());
  const Finding& f = r.findings[0];
  EXPECT_EQ(f.cls, "network");
  ASSERT_FALSE(f.evidence.empty());
  for (const Evidence& e : f.evidence) {
    EXPECT_NE(e.text.find("cpu,na"), std::string::npos) << e.text;
    EXPECT_EQ(e.text.find("Assertion:0x0"), std::string::npos) << e.text;
  }
}

}  // namespace
}  // namespace vigil::diagnose
