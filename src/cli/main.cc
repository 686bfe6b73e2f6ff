// vigil: the one command (run, diagnose, bench, health).
int main() { return 0; }
