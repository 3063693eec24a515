#ifndef MQTTCHAT_CMOSQUITTO_SHIM_H
#define MQTTCHAT_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#endif
